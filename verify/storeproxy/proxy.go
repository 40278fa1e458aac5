// Package storeproxy is a small fault-injecting HTTP proxy in front of an
// S3 store on loopback (the SeaweedFS of a verify run): the tablet
// servers and masters talk to the store through it, and the verifier
// switches it, at run time, to answer slowly, to throttle (503 SlowDown
// with S3's XML error body), or to cut connections, either before the
// request reaches the store (it did not happen) or after the store
// carried it out (it happened, and the answer is lost). It sends traffic
// only to the one store on 127.0.0.1 it was made for.
//
//	p, err := storeproxy.Start("127.0.0.1:8333")
//	defer p.Close()
//	endpoint := p.Endpoint() // give this to the clients
//	p.Set(storeproxy.Fault{Kind: storeproxy.SlowDown})
//	p.Set(storeproxy.Fault{}) // healed
package storeproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Kind names what the proxy does to the requests a Fault picks.
type Kind string

// The kinds of faults.
const (
	// None passes every request through.
	None Kind = ""
	// Slow holds the store's answer for Fault.Delay before passing it on
	// (the store has carried the request out by then).
	Slow Kind = "slow"
	// SlowDown answers 503 SlowDown, as S3 does when it throttles,
	// without passing the request on.
	SlowDown Kind = "slowdown"
	// CutRequest closes the connection before the request reaches the
	// store: the request did not happen.
	CutRequest Kind = "cut-request"
	// CutResponse passes the request on and closes the connection in the
	// middle of the store's answer (before it, if the answer has no
	// body): the request happened, and the client cannot know it.
	CutResponse Kind = "cut-response"
	// Cut alternates CutRequest and CutResponse over the requests it
	// picks.
	Cut Kind = "cut"
)

// Fault says what to do to which requests. The zero value passes every
// request through.
type Fault struct {
	Kind Kind
	// Delay is how long Slow holds an answer. The default is 1s.
	Delay time.Duration
	// Every picks every Every-th request (counted from Set); the others
	// pass through. The default (0 or 1) picks every request.
	Every int
}

// Stats counts what the proxy did since it started.
type Stats struct {
	Passed, Delayed, Throttled, CutRequests, CutResponses int64
}

// Proxy is a running proxy.
type Proxy struct {
	target *url.URL
	lis    net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	done   chan struct{} // closed by Close: delays end at once
	wg     sync.WaitGroup

	fault atomic.Pointer[Fault]
	seen  atomic.Int64 // requests since the last Set
	stats struct {
		passed, delayed, throttled, cutReqs, cutResps atomic.Int64
	}
	closeOnce sync.Once
}

// ErrNotLoopback: the proxy fronts only a store on 127.0.0.1, so that a
// test can never send its faults (or its traffic) anywhere else.
var ErrNotLoopback = errors.New("storeproxy: the store must be on 127.0.0.1")

// Start starts a proxy on a free port of 127.0.0.1 in front of the store
// at target ("127.0.0.1:PORT" or "http://127.0.0.1:PORT").
func Start(target string) (*Proxy, error) {
	u, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("storeproxy: %w", err)
	}
	p := &Proxy{target: u, lis: lis, done: make(chan struct{})}
	p.fault.Store(&Fault{})
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// S3 signs the Host header: the store must see the one the
			// client signed.
			r.Out.Host = r.In.Host
		},
		// An unreachable store is a 502, which S3 clients retry; the
		// proxy does not log each one.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(lis)
	}()
	return p, nil
}

func parseTarget(target string) (*url.URL, error) {
	raw := target
	if u, err := url.Parse(target); err != nil || u.Scheme == "" || u.Host == "" {
		raw = "http://" + target
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("storeproxy: target %q: want 127.0.0.1:PORT", target)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil || host != "127.0.0.1" {
		return nil, fmt.Errorf("%w: target %q", ErrNotLoopback, target)
	}
	return &url.URL{Scheme: "http", Host: u.Host}, nil
}

// Endpoint is the proxy's URL, for the clients.
func (p *Proxy) Endpoint() string { return "http://" + p.lis.Addr().String() }

// Set switches the fault; the zero Fault heals. It takes effect for the
// requests that arrive after it (a delay under way runs out).
func (p *Proxy) Set(f Fault) {
	if f.Kind == Slow && f.Delay <= 0 {
		f.Delay = time.Second
	}
	if f.Every <= 0 {
		f.Every = 1
	}
	p.seen.Store(0)
	p.fault.Store(&f)
}

// Fault returns the fault in effect.
func (p *Proxy) Fault() Fault { return *p.fault.Load() }

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	return Stats{Passed: p.stats.passed.Load(), Delayed: p.stats.delayed.Load(), Throttled: p.stats.throttled.Load(),
		CutRequests: p.stats.cutReqs.Load(), CutResponses: p.stats.cutResps.Load()}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.srv.Close()
		p.wg.Wait()
	})
	return err
}

// pick returns what to do to the request just arrived.
func (p *Proxy) pick() Kind {
	f := p.fault.Load()
	if f.Kind == None {
		return None
	}
	n := p.seen.Add(1)
	every := int64(max(f.Every, 1))
	if n%every != 0 {
		return None
	}
	if f.Kind == Cut {
		if (n/every)%2 == 1 {
			return CutRequest
		}
		return CutResponse
	}
	return f.Kind
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := p.fault.Load()
	switch p.pick() {
	case SlowDown:
		p.stats.throttled.Add(1)
		writeSlowDown(w, r)
	case CutRequest:
		p.stats.cutReqs.Add(1)
		// Nothing was sent on: close the connection without an answer.
		panic(http.ErrAbortHandler)
	case CutResponse:
		p.stats.cutResps.Add(1)
		p.rp.ServeHTTP(&cutWriter{ResponseWriter: w}, r)
	case Slow:
		p.stats.delayed.Add(1)
		p.rp.ServeHTTP(&slowWriter{ResponseWriter: w, delay: f.Delay, ctx: r.Context(), done: p.done}, r)
	default:
		p.stats.passed.Add(1)
		p.rp.ServeHTTP(w, r)
	}
}

// writeSlowDown answers as S3 does when it throttles.
func writeSlowDown(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method == http.MethodHead {
		return
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><Resource>%s</Resource><RequestId>storeproxy</RequestId></Error>`,
		xmlEscape(r.URL.Path))
}

func xmlEscape(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		switch c {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// slowWriter holds the store's answer for delay before its first byte.
type slowWriter struct {
	http.ResponseWriter
	delay  time.Duration
	ctx    context.Context
	done   <-chan struct{}
	waited bool
}

func (s *slowWriter) wait() {
	if s.waited {
		return
	}
	s.waited = true
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	case <-s.done:
	}
}

func (s *slowWriter) WriteHeader(code int) {
	s.wait()
	s.ResponseWriter.WriteHeader(code)
}

func (s *slowWriter) Write(b []byte) (int, error) {
	s.wait()
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (which the reverse proxy flushes
// through) reach the connection.
func (s *slowWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// cutWriter passes on the status, the headers and half of the body the
// store answered (none of an answer without a body), then closes the
// connection.
type cutWriter struct {
	http.ResponseWriter
	left int64 // bytes of the body still to pass on
}

func (c *cutWriter) WriteHeader(code int) {
	n := c.ResponseWriter.Header().Get("Content-Length")
	var size int64
	fmt.Sscan(n, &size)
	if size <= 0 {
		// No body to cut into (or its length unknown): the store has
		// answered; the client hears nothing.
		panic(http.ErrAbortHandler)
	}
	c.left = size / 2
	c.ResponseWriter.WriteHeader(code)
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) <= c.left {
		c.left -= int64(len(b))
		return c.ResponseWriter.Write(b)
	}
	c.ResponseWriter.Write(b[:c.left])
	http.NewResponseController(c.ResponseWriter).Flush()
	panic(http.ErrAbortHandler)
}

func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
