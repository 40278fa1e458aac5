package verify

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one process of a local cluster: `tabula etcd`, `tabula master`
// or `tabula tabletserver`, restarted with the same arguments (so the same
// address, ID and data) after a fault. Its output is appended to its log.
type proc struct {
	name  string // "etcd", "master-1", "ts-2"
	addr  string // the address it listens on
	bin   string
	args  []string
	log   string
	netns string // the network namespace it runs in ("" for the host's)

	// mu protects the fields below.
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	killed  bool          // we killed or terminated it: its exit is expected
	paused  bool          // SIGSTOPped
	starts  int
}

// start runs the process.
func (p *proc) start() error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== %s: tabula %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	if p.netns != "" {
		// ip execs the binary in the namespace: the pid is tabula's, so
		// signals reach it as before.
		cmd = exec.Command("ip", append([]string{"netns", "exec", p.netns, p.bin}, p.args...)...)
	}
	cmd.Stdout, cmd.Stderr = f, f // files, not pipes: no copying goroutines
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("verify: starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.waitErr, p.killed, p.paused = cmd, done, nil, false, false
	p.starts++
	p.mu.Unlock()
	go func() { // owned by p: kill and terminate wait for done
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// exited reports whether the process has exited, and whether we caused it.
func (p *proc) exited() (exited, expected bool, err error) {
	p.mu.Lock()
	done, killed := p.done, p.killed
	p.mu.Unlock()
	if done == nil {
		return true, true, nil
	}
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, killed, p.waitErr
	default:
		return false, false, nil
	}
}

func (p *proc) running() bool {
	ex, _, _ := p.exited()
	return !ex
}

// signal sends sig to the running process.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	switch sig {
	case syscall.SIGKILL, syscall.SIGTERM:
		p.killed = true
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	p.mu.Unlock()
	if cmd == nil || !p.running() {
		return fmt.Errorf("verify: %s is not running", p.name)
	}
	return cmd.Process.Signal(sig)
}

// kill sends SIGKILL (a stopped process dies too) and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return
	}
	p.signal(syscall.SIGKILL)
	<-done
}

// terminate sends SIGTERM and waits up to wait for a clean exit, then
// kills.
func (p *proc) terminate(wait time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil || !p.running() {
		return nil
	}
	p.signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		p.kill()
		return fmt.Errorf("verify: %s did not exit within %v of SIGTERM; killed it", p.name, wait)
	}
}

// waitListening waits until the process accepts TCP connections.
func (p *proc) waitListening(within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ex, _, err := p.exited(); ex {
			return fmt.Errorf("verify: %s exited while starting (%v); see %s:\n%s", p.name, err, p.log, p.tail(20))
		}
		conn, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("verify: %s does not listen on %s after %v; see %s:\n%s", p.name, p.addr, within, p.log, p.tail(20))
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// crashMarks are what the Go runtime writes when a process crashes or
// finds a data race.
var crashMarks = []string{"WARNING: DATA RACE", "\npanic: ", "\nfatal error: "}

// crashes returns the crash marks found in the process's log.
func (p *proc) crashes() []string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range crashMarks {
		if i := strings.Index(string(b), m); i >= 0 {
			end := min(len(b), i+1500)
			out = append(out, fmt.Sprintf("%s's log (%s) shows %q:\n%s", p.name, p.log, strings.TrimSpace(m), b[i:end]))
		}
	}
	return out
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
