package tlsconf

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// handshakeResult is what both ends of one connection saw.
type handshakeResult struct {
	server, client       tls.ConnectionState
	serverErr, clientErr error
}

// handshake connects a client to a server over loopback TCP and has the
// server send one byte after its handshake. The client reads it, so a
// client certificate the server rejects after the client's side of a TLS
// 1.3 handshake finished still shows up as a client error. Loopback TCP
// rather than net.Pipe: a rejecting server writes its alert without
// waiting for the client to read.
func handshake(t *testing.T, srvCfg, cliCfg *tls.Config) handshakeResult {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var r handshakeResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			r.serverErr = err
			return
		}
		s := tls.Server(c, srvCfg)
		defer s.Close()
		if r.serverErr = s.Handshake(); r.serverErr == nil {
			_, r.serverErr = s.Write([]byte{1})
		}
		r.server = s.ConnectionState()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cliCfg)
	if err == nil {
		_, err = io.ReadFull(c, make([]byte, 1))
		r.client = c.ConnectionState()
		c.Close()
	}
	r.clientErr = err
	wg.Wait()
	return r
}

// fakeClock is the time the reload checks see; tests move it by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func devPKI(t *testing.T) DevPKI {
	t.Helper()
	p, err := GenerateDev(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustServer(t *testing.T, f Files) *tls.Config {
	t.Helper()
	c, err := ServerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustClient(t *testing.T, f Files) *tls.Config {
	t.Helper()
	c, err := ClientConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// replaceFile overwrites dst with data and gives it a modification time
// no earlier write had, so the change is seen whatever the file system's
// timestamp resolution.
func replaceFile(t *testing.T, dst string, data []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
