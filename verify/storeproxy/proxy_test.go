package storeproxy

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// store is a fake S3 store that counts the requests it carried out and
// answers each with a body.
type store struct {
	srv  *httptest.Server
	hits atomic.Int64
	host atomic.Value // the Host header of the last request
}

func newStore(t *testing.T) *store {
	s := &store{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.host.Store(r.Host)
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPut {
			w.Header().Set("Content-Length", "0")
			return
		}
		io.WriteString(w, strings.Repeat("object body ", 100))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func start(t *testing.T, s *store) *Proxy {
	p, err := Start(s.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// client makes one request per connection, so that a cut connection
// never hides behind a retry of the transport.
func do(t *testing.T, p *Proxy, method string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(method, p.Endpoint()+"/bucket/key", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func TestPassesRequestsThroughWithTheirHost(t *testing.T) {
	s := newStore(t)
	p := start(t, s)
	resp, body, err := do(t, p, http.MethodGet)
	if err != nil || resp.StatusCode != 200 || len(body) != 1200 {
		t.Fatalf("GET through the proxy: %v, %d bytes, %v", resp, len(body), err)
	}
	// S3 signs the Host header: the store must see the proxy's.
	if got, want := s.host.Load(), strings.TrimPrefix(p.Endpoint(), "http://"); got != want {
		t.Errorf("the store saw Host %q, want the one the client sent, %q", got, want)
	}
	if st := p.Stats(); st.Passed != 1 || s.hits.Load() != 1 {
		t.Errorf("stats %+v, store hits %d", st, s.hits.Load())
	}
}

// A throttled request gets S3's 503 SlowDown with its XML body, and the
// store never sees it; Every picks every n-th request only.
func TestSlowDownAnswersAsS3Throttles(t *testing.T) {
	s := newStore(t)
	p := start(t, s)
	p.Set(Fault{Kind: SlowDown, Every: 2})
	var codes []int
	for range 4 {
		resp, body, err := do(t, p, http.MethodPut)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode != http.StatusServiceUnavailable {
			continue
		}
		var e struct{ Code, Message string }
		if err := xml.Unmarshal(body, &e); err != nil || e.Code != "SlowDown" {
			t.Errorf("throttled answer %q: code %q, %v; want S3's SlowDown error", body, e.Code, err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/xml" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	if want := []int{200, 503, 200, 503}; !slices.Equal(codes, want) {
		t.Errorf("status codes %v, want %v", codes, want)
	}
	if s.hits.Load() != 2 || p.Stats().Throttled != 2 {
		t.Errorf("store carried out %d requests, proxy throttled %d; want 2 and 2", s.hits.Load(), p.Stats().Throttled)
	}
	p.Set(Fault{})
	if resp, _, err := do(t, p, http.MethodPut); err != nil || resp.StatusCode != 200 {
		t.Errorf("after healing: %v, %v", resp, err)
	}
}

// A request cut before the store never happened; one cut in the answer
// did happen, and the client gets an error either way.
func TestCutsBeforeAndAfterTheStore(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		method   string
		wantHits int64
	}{
		{CutRequest, http.MethodPut, 0},
		{CutResponse, http.MethodPut, 1}, // no body: nothing of the answer arrives
		{CutResponse, http.MethodGet, 1}, // half the body arrives
	} {
		s := newStore(t)
		p := start(t, s)
		p.Set(Fault{Kind: tc.kind})
		resp, body, err := do(t, p, tc.method)
		if err == nil {
			t.Errorf("%s %s: status %d and %d bytes, want a cut connection", tc.kind, tc.method, resp.StatusCode, len(body))
		}
		if tc.method == http.MethodGet && resp != nil && (len(body) == 0 || len(body) >= 1200) {
			t.Errorf("%s GET: %d bytes of the body arrived, want part of it", tc.kind, len(body))
		}
		if got := s.hits.Load(); got != tc.wantHits {
			t.Errorf("%s %s: the store carried out %d requests, want %d", tc.kind, tc.method, got, tc.wantHits)
		}
	}
}

// Cut alternates: a cut request, then a cut answer.
func TestCutAlternates(t *testing.T) {
	s := newStore(t)
	p := start(t, s)
	p.Set(Fault{Kind: Cut})
	for range 4 {
		if _, _, err := do(t, p, http.MethodPut); err == nil {
			t.Error("a request went through")
		}
	}
	if st := p.Stats(); st.CutRequests != 2 || st.CutResponses != 2 || s.hits.Load() != 2 {
		t.Errorf("stats %+v, store hits %d; want 2 cuts of each kind and 2 hits", st, s.hits.Load())
	}
}

// A slow answer comes no sooner than the delay (a lower bound: no test of
// speed), after the store carried the request out.
func TestSlowHoldsTheAnswer(t *testing.T) {
	s := newStore(t)
	p := start(t, s)
	const delay = 100 * time.Millisecond
	p.Set(Fault{Kind: Slow, Delay: delay})
	begin := time.Now()
	resp, body, err := do(t, p, http.MethodGet)
	if err != nil || resp.StatusCode != 200 || len(body) != 1200 {
		t.Fatalf("slow GET: %v, %d bytes, %v", resp, len(body), err)
	}
	if took := time.Since(begin); took < delay {
		t.Errorf("answered after %v, before the delay of %v", took, delay)
	}
	if p.Stats().Delayed != 1 || s.hits.Load() != 1 {
		t.Errorf("stats %+v, hits %d", p.Stats(), s.hits.Load())
	}
}

// Close ends a delay under way rather than waiting it out.
func TestCloseEndsADelay(t *testing.T) {
	s := newStore(t)
	p := start(t, s)
	p.Set(Fault{Kind: Slow, Delay: time.Hour})
	errc := make(chan error, 1)
	go func() {
		_, _, err := do(t, p, http.MethodGet)
		errc <- err
	}()
	for s.hits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Close()
	<-errc
}

func TestFrontsOnlyLoopback(t *testing.T) {
	for _, target := range []string{"10.1.2.3:8333", "http://example.com:80", "localhost:8333", "http://[::1]:8333"} {
		if p, err := Start(target); !errors.Is(err, ErrNotLoopback) {
			if p != nil {
				p.Close()
			}
			t.Errorf("Start(%q): %v, want ErrNotLoopback", target, err)
		}
	}
}
