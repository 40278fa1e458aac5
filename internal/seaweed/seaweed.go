// Package seaweed runs a SeaweedFS server ("weed mini": master, volume,
// filer and S3 gateway in one process) on loopback for tests: the object
// store the s3fs backend is tested against. The binary is built by
// `make tools` into .tools/bin/weed (or named by TABULA_WEED).
//
//	srv, err := seaweed.Start(ctx, seaweed.Config{Dir: t.TempDir(), Bucket: "tabula"})
//	defer srv.Close()
//	endpoint := srv.Endpoint() // http://127.0.0.1:PORT
package seaweed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// ErrNoBinary means no weed binary was found.
var ErrNoBinary = errors.New("seaweed: no weed binary: run `make tools` (it builds .tools/bin/weed), set TABULA_WEED, or put weed on the PATH")

// Config says where the server keeps its data.
type Config struct {
	// Dir holds all of SeaweedFS's data and its log (weed.log). Required.
	Dir string
	// Bucket is created at start when set.
	Bucket string
	// StartTimeout bounds the wait for the S3 port. The default is 60s.
	StartTimeout time.Duration
	// S3Config, when set, is the JSON of SeaweedFS's S3 identities
	// (access keys and the actions each may take); without it the S3
	// gateway accepts anonymous requests.
	S3Config string
}

// Server is a running weed process.
type Server struct {
	cfg   Config
	cmd   *exec.Cmd
	done  chan struct{}
	err   error
	s3    int // the S3 gateway's port
	filer int // the filer's port
	args  []string
}

// Binary returns the weed binary's path: TABULA_WEED, else .tools/bin/weed
// at the repository root (for binaries built from a checkout), else weed
// on the PATH.
func Binary() (string, error) {
	if p := os.Getenv("TABULA_WEED"); p != "" {
		return p, nil
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(file), "..", "..", ".tools", "bin", "weed")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("weed"); err == nil {
		return p, nil
	}
	return "", ErrNoBinary
}

// freePorts returns n loopback ports that were free a moment ago, each
// with port+10000 free too (weed puts its gRPC ports there).
func freePorts(n int) ([]int, error) {
	var out []int
	for tries := 0; len(out) < n && tries < 1000; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+10000 > 65535 {
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		l2.Close()
		out = append(out, p)
	}
	if len(out) < n {
		return nil, errors.New("seaweed: no free ports")
	}
	return out, nil
}

// Start starts weed mini on free loopback ports and waits until its S3
// gateway answers.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if _, err := Binary(); err != nil {
		return nil, err
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	// The ports were free a moment ago, but another process (a test
	// running beside this one) may take one before weed binds it; weed
	// then exits at once, and a fresh set of ports is tried.
	for attempt := 1; ; attempt++ {
		s, err := startOnFreePorts(ctx, cfg)
		if err == nil || !errors.Is(err, errExited) || attempt == 3 {
			return s, err
		}
	}
}

// errExited marks a weed that exited before its S3 port answered.
var errExited = errors.New("weed exited while starting")

func startOnFreePorts(ctx context.Context, cfg Config) (*Server, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, s3: ports[3], filer: ports[2]}
	s.args = []string{"mini", "-dir=" + filepath.Join(cfg.Dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + strconv.Itoa(ports[0]), "-volume.port=" + strconv.Itoa(ports[1]),
		"-filer.port=" + strconv.Itoa(ports[2]), "-s3.port=" + strconv.Itoa(ports[3]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false"}
	if cfg.Bucket != "" {
		s.args = append(s.args, "-bucket="+cfg.Bucket)
	}
	if cfg.S3Config != "" {
		if err := s.SetS3Config(cfg.S3Config); err != nil {
			return nil, err
		}
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context) error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.cfg.Dir, "data"), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(s.cfg.Dir, "weed.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("seaweed: starting %s: %w", bin, err)
	}
	s.done = make(chan struct{})
	go func() {
		s.err = s.cmd.Wait()
		log.Close()
		close(s.done)
	}()
	deadline := time.Now().Add(s.cfg.StartTimeout)
	for {
		if s.ready(ctx) {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("seaweed: %w (%v); see %s", errExited, s.err, filepath.Join(s.cfg.Dir, "weed.log"))
		case <-ctx.Done():
			s.Kill()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("seaweed: the S3 port did not answer within %s; see %s", s.cfg.StartTimeout, filepath.Join(s.cfg.Dir, "weed.log"))
		}
	}
}

// ready reports whether the S3 gateway answers and the bucket (if any) is
// there.
func (s *Server) ready(ctx context.Context) bool {
	url := s.Endpoint() + "/"
	if s.cfg.Bucket != "" {
		url += s.cfg.Bucket
	}
	code := status(ctx, http.MethodHead, url)
	if code == http.StatusOK {
		return true
	}
	// With identities configured an anonymous request is refused (403)
	// whether the bucket exists or not (weed creates it a moment after
	// the gateway answers): ask the filer, which has no authentication on
	// loopback, for the bucket's folder.
	if s.cfg.S3Config == "" || code != http.StatusForbidden {
		return false
	}
	return s.cfg.Bucket == "" ||
		status(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(s.filer)+"/buckets/"+s.cfg.Bucket+"/") == http.StatusOK
}

// status returns the HTTP status of a request, 0 if there was no answer.
func status(ctx context.Context, method, url string) int {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Endpoint is the S3 gateway's URL.
func (s *Server) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.s3) }

// Kill stops the process at once (SIGKILL to its process group).
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// SetS3Config replaces the S3 identities; weed reads them at start, so
// they take effect at the next Restart. Tests use it to revoke a key
// mid-run. The gateway cannot go back to anonymous: json must be set.
func (s *Server) SetS3Config(json string) error {
	if json == "" {
		return errors.New("seaweed: SetS3Config needs identities")
	}
	path := filepath.Join(s.cfg.Dir, "s3.json")
	if err := os.WriteFile(path, []byte(json), 0o600); err != nil {
		return err
	}
	if arg := "-s3.config=" + path; !slices.Contains(s.args, arg) {
		s.args = append(s.args, arg)
	}
	s.cfg.S3Config = json
	return nil
}

// Restart starts the process again on the same ports and data after Kill.
func (s *Server) Restart(ctx context.Context) error {
	s.Kill()
	return s.start(ctx)
}

// Close stops the process (SIGTERM, then SIGKILL after 10s).
func (s *Server) Close() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}
