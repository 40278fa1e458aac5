package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The CLI tests run the real binary, built once, against one real
// `tabula dev` process started on first use and stopped (SIGTERM, then
// wait) when the tests end.

var (
	binDir string // holds the built binary and the dev cluster's data
	binErr error

	devOnce sync.Once
	dev     struct {
		cmd  *exec.Cmd
		addr string
		err  error
		dir  string
		log  *os.File
	}
)

func TestMain(m *testing.M) {
	var err error
	binDir, err = os.MkdirTemp("", "tabula-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if err := stopDev(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping tabula dev:", err)
			if code == 0 {
				code = 1
			}
		}
		if code == 0 {
			os.RemoveAll(binDir)
		} else {
			fmt.Fprintln(os.Stderr, "kept test files in", binDir)
		}
		os.Exit(code)
	}))
}

var buildOnce sync.Once

// binary builds the tabula binary once and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(binDir, "tabula")
	buildOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return path
}

// devCluster starts `tabula dev --servers 3` once and returns the master
// address it wrote to DATA/master.addr.
func devCluster(t *testing.T) string {
	t.Helper()
	bin := binary(t)
	devOnce.Do(func() {
		dev.dir = filepath.Join(binDir, "dev")
		if dev.log, dev.err = os.Create(filepath.Join(binDir, "dev.log")); dev.err != nil {
			return
		}
		args := []string{"dev", "--servers", "3", "--data", dev.dir,
			"--master-addr", "127.0.0.1:0", "--lease-ttl", "2s", "--log-level", "warn", "--http", "127.0.0.1:0",
			"--load-interval", "500ms", "--load-window", "500ms"} // tabula top sees load soon
		if secureAll() {
			args = append(args, "--auth")
		} else {
			args = append(args, "--gateway", "127.0.0.1:0") // a free port, not the default
		}
		dev.cmd = exec.Command(bin, args...)
		// Files, not pipes: exec starts no goroutines to copy output.
		dev.cmd.Stdout, dev.cmd.Stderr = dev.log, dev.log
		if dev.err = dev.cmd.Start(); dev.err != nil {
			return
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(filepath.Join(dev.dir, "master.addr")); err == nil && len(bytes.TrimSpace(b)) > 0 {
				dev.addr = string(bytes.TrimSpace(b))
				return
			}
			if err := dev.cmd.Process.Signal(syscall.Signal(0)); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		log, _ := os.ReadFile(dev.log.Name())
		dev.err = fmt.Errorf("tabula dev did not write master.addr; its output:\n%s", log)
	})
	if dev.err != nil {
		t.Fatal(dev.err)
	}
	return dev.addr
}

// stopDev sends SIGTERM to the dev cluster and waits for a clean exit.
func stopDev() error {
	if dev.cmd == nil || dev.cmd.Process == nil {
		return nil
	}
	defer dev.log.Close()
	if err := dev.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- dev.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			log, _ := os.ReadFile(dev.log.Name())
			return fmt.Errorf("tabula dev exited with %v; output:\n%s", err, log)
		}
		return nil
	case <-time.After(30 * time.Second):
		dev.cmd.Process.Kill()
		<-done
		return errors.New("tabula dev did not stop within 30s of SIGTERM")
	}
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// secureAll runs the dev cluster with --auth and every command as its
// admin (`make test` runs the package once this way).
// A function, read while tests run, so that go test's cache knows the
// result depends on it.
func secureAll() bool { return os.Getenv("TABULA_TEST_SECURE") != "" }

// tabula runs the binary with TABULA_MASTER pointing at the dev cluster
// (and, under secureAll, its CA and admin token in TABULA_TLS_CA and
// TABULA_TOKEN).
func tabula(t *testing.T, args ...string) result {
	t.Helper()
	addr := devCluster(t)
	return tabulaEnv(t, append([]string{"TABULA_MASTER=" + addr}, devSecurityEnv(t)...), args...)
}

// devSecurityEnv is the environment that reaches the secured dev cluster.
func devSecurityEnv(t *testing.T) []string {
	if !secureAll() {
		return nil
	}
	tok, err := os.ReadFile(filepath.Join(dev.dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"TABULA_TLS_CA=" + filepath.Join(dev.dir, "tls", "ca.pem"), "TABULA_TOKEN=" + strings.TrimSpace(string(tok))}
}

func tabulaEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return tabulaRun(t, env, nil, args...)
}

// tabulaStdin runs the binary as tabula does, with stdin as its standard
// input.
func tabulaStdin(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	addr := devCluster(t)
	return tabulaRun(t, append([]string{"TABULA_MASTER=" + addr}, devSecurityEnv(t)...), stdin, args...)
}

func tabulaRun(t *testing.T, env []string, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("tabula %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok runs the binary and fails the test unless it exits 0.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := tabula(t, args...)
	if r.code != 0 {
		t.Fatalf("tabula %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs the binary and fails the test unless it exits non-zero with
// every want on stderr.
func fails(t *testing.T, args []string, want ...string) result {
	t.Helper()
	r := tabula(t, args...)
	if r.code == 0 {
		t.Fatalf("tabula %s succeeded; want an error\nstdout: %s", strings.Join(args, " "), r.stdout)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("tabula %s: stderr lacks %q:\n%s", strings.Join(args, " "), w, r.stderr)
		}
	}
	return r
}
