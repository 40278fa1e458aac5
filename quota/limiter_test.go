package quota

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

func write(principal, table string, rows, bytes int64) Request {
	return Request{Principal: principal, Write: true, Grows: true, Tables: []Cost{{Table: table, Requests: rows, Bytes: bytes}}}
}

func refusal(t *testing.T, err error) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("got %v, want a *Refusal", err)
	}
	return r
}

func TestLimiterPrincipalQuotaRefusesOnlyThatPrincipal(t *testing.T) {
	c := newClock()
	l := NewLimiter(c.now)
	l.Set(Key{Principal, "batch"}, meta.QuotaRecord{WriteRequests: 5})
	for range 5 {
		if err := l.Admit(write("batch", "t", 1, 10)); err != nil {
			t.Fatal(err)
		}
	}
	r := refusal(t, l.Admit(write("batch", "t", 1, 10)))
	if r.Key != (Key{Principal, "batch"}) || r.Limit != WriteRequests || r.Delay != 200*time.Millisecond {
		t.Fatalf("refusal %+v, want principal batch write_requests in 200ms", r)
	}
	for range 100 {
		if err := l.Admit(write("app", "t", 1, 10)); err != nil {
			t.Fatalf("an unthrottled principal was refused: %v", err)
		}
	}
	if err := l.Admit(Request{Principal: "batch", Tables: []Cost{{Table: "t", Requests: 1}}}); err != nil {
		t.Fatalf("a read was refused by a write quota: %v", err)
	}
	c.advance(200 * time.Millisecond)
	if err := l.Admit(write("batch", "t", 1, 10)); err != nil {
		t.Fatalf("after the delay the write is still refused: %v", err)
	}
}

func TestLimiterRefusalTakesNothing(t *testing.T) {
	c := newClock()
	l := NewLimiter(c.now)
	l.Set(Key{Table, "ns:t"}, meta.QuotaRecord{WriteRequests: 100})
	l.Set(Key{Namespace, "ns"}, meta.QuotaRecord{WriteBytes: 1000})
	if err := l.Admit(write("", "ns:t", 1, 1000)); err != nil {
		t.Fatal(err)
	}
	// The namespace's bytes are spent; the table's requests are not: a
	// refused write must not use up the table's tokens.
	for range 50 {
		r := refusal(t, l.Admit(write("", "ns:t", 1, 10)))
		if r.Key != (Key{Namespace, "ns"}) || r.Limit != WriteBytes {
			t.Fatalf("refused by %+v, want namespace ns write_bytes", r)
		}
	}
	// 10ms: the namespace's 10 bytes back, the table's 99 tokens kept (1
	// more, less than the 50 refusals would have taken).
	c.advance(10 * time.Millisecond)
	for i := range 99 {
		if err := l.Admit(write("", "ns:t", 1, 0)); err != nil {
			t.Fatalf("write %d after the refusals: %v (the refusals took the table's tokens)", i, err)
		}
	}
}

func TestLimiterShareScalesTheRate(t *testing.T) {
	c := newClock()
	l := NewLimiter(c.now)
	k := Key{Table, "t"}
	l.Set(k, meta.QuotaRecord{ReadRequests: 100})
	l.SetShare(k, 0.25) // a quarter of the table's tablets here: 25/s
	n := 0
	for l.Admit(Request{Tables: []Cost{{Table: "t", Requests: 1}}}) == nil {
		n++
	}
	if n != 25 {
		t.Fatalf("admitted %d reads at once, want the share's burst of 25", n)
	}
}

func TestLimiterReadBytesDebt(t *testing.T) {
	c := newClock()
	l := NewLimiter(c.now)
	l.Set(Key{Principal, "p"}, meta.QuotaRecord{ReadBytes: 1000})
	read := Request{Principal: "p", Tables: []Cost{{Table: "t", Requests: 1}}}
	if err := l.Admit(read); err != nil {
		t.Fatal(err)
	}
	l.Charge("p", "t", 5000) // the scan returned 5 KB
	r := refusal(t, l.Admit(read))
	if r.Limit != ReadBytes || r.Delay != 4*time.Second {
		t.Fatalf("refusal %+v, want read_bytes in 4s", r)
	}
}

func TestLimiterSpaceQuota(t *testing.T) {
	l := NewLimiter(newClock().now)
	k := Key{Namespace, cell.DefaultNamespace}
	l.Set(k, meta.QuotaRecord{SpaceBytes: 1000})
	l.SetUsage(k, 999)
	if err := l.Admit(write("", "t", 1, 10)); err != nil {
		t.Fatalf("a write under the space quota: %v", err)
	}
	l.SetUsage(k, 1000)
	r := refusal(t, l.Admit(write("", "t", 1, 10)))
	if r.Limit != SpaceBytes || r.Key != k || r.Delay != SpaceRetryDelay {
		t.Fatalf("refusal %+v, want the default namespace's space_bytes", r)
	}
	del := Request{Write: true, Tables: []Cost{{Table: "t", Requests: 1, Bytes: 3}}}
	if err := l.Admit(del); err != nil {
		t.Fatalf("a deletion was refused past the space quota: %v (deletes are how it gets back under)", err)
	}
	if err := l.Admit(write("", "other:t", 1, 10)); err != nil {
		t.Fatalf("another namespace's write was refused: %v", err)
	}
	l.SetUsage(k, 10)
	if err := l.Admit(write("", "t", 1, 10)); err != nil {
		t.Fatalf("a write after the usage fell: %v", err)
	}
}

func TestStatusCarriesRetryInfoAndQuotaFailure(t *testing.T) {
	err := Status(&Refusal{Key: Key{Table, "t"}, Limit: WriteRequests, Value: 10, Share: 1, Delay: 1500 * time.Millisecond})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("code %s", st.Code())
	}
	var delay time.Duration
	var subject string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			delay = d.GetRetryDelay().AsDuration()
		case *errdetails.QuotaFailure:
			subject = d.GetViolations()[0].GetSubject()
		}
	}
	if delay != 1500*time.Millisecond || subject != "table:t" {
		t.Fatalf("details: delay %s, subject %q; message %q", delay, subject, st.Message())
	}
}

func TestNamespaceOf(t *testing.T) {
	for in, want := range map[string]string{"t": "default", "ns:t": "ns", "ns:a:b": "ns"} {
		if got := NamespaceOf(in); got != want {
			t.Errorf("NamespaceOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShare(t *testing.T) {
	for _, c := range []struct {
		mine, total int64
		want        float64
	}{{1, 4, 0.25}, {0, 4, 0.25}, {3, 0, 1}, {2, 2, 1}} {
		if got := Share(c.mine, c.total); got != c.want {
			t.Errorf("Share(%d, %d) = %g, want %g", c.mine, c.total, got, c.want)
		}
	}
}

// A write that reads first (CheckAndMutateRow) takes a read request and a
// write request: a read quota refuses it once spent, and a write quota
// too.
func TestLimiterCheckAndMutateIsAReadAndAWrite(t *testing.T) {
	c := newClock()
	l := NewLimiter(c.now)
	l.Set(Key{Table, "t"}, meta.QuotaRecord{ReadRequests: 2, WriteRequests: 100})
	cam := Request{Write: true, Reads: true, Grows: true, Tables: []Cost{{Table: "t", Requests: 1, Bytes: 10}}}
	for range 2 {
		if err := l.Admit(cam); err != nil {
			t.Fatal(err)
		}
	}
	r := refusal(t, l.Admit(cam))
	if r.Limit != ReadRequests {
		t.Fatalf("the third check-and-mutate on 2 reads a second: refused by %s, want %s", r.Limit, ReadRequests)
	}
	// Plain writes do not take read requests.
	if err := l.Admit(write("", "t", 1, 10)); err != nil {
		t.Fatalf("a plain write: %v", err)
	}
}

// Callers refused together are told to come back one after the other,
// each when the bucket will hold its cost again: coming back at its
// delay, each is admitted, none refused twice. The spread is bounded.
func TestLimiterSpreadsTheRetriesOfRefusedCallers(t *testing.T) {
	c := newClock()
	l := NewLimiter(c.now)
	l.Set(Key{Table, "t"}, meta.QuotaRecord{WriteRequests: 2000}) // burst 2,000 rows
	batch := write("", "t", 100, 0)                               // 100 rows: 50ms of the rate
	for range 20 {
		if err := l.Admit(batch); err != nil {
			t.Fatal(err)
		}
	}
	const callers = 16
	var delays []time.Duration
	for range callers {
		delays = append(delays, refusal(t, l.Admit(batch)).Delay)
	}
	for i, d := range delays {
		if want := time.Duration(i+1) * 50 * time.Millisecond; d != want {
			t.Fatalf("refused caller %d is told to come back in %s, want %s (delays %v)", i, d, want, delays)
		}
	}
	for i, d := range delays {
		c.t = time.Unix(1_000_000, 0).Add(d)
		if err := l.Admit(batch); err != nil {
			t.Fatalf("caller %d, back after its %s: %v", i, d, err)
		}
	}
	// Callers that never come back leave slots behind; later refusals
	// wait at most MaxSpread past the bucket's own wait.
	for range 100 {
		l.Admit(batch)
	}
	if d := refusal(t, l.Admit(batch)).Delay; d > 50*time.Millisecond+MaxSpread {
		t.Fatalf("after 100 abandoned slots a refusal waits %s, more than the wait plus MaxSpread", d)
	}
}
