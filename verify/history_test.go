package verify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestHistoryRoundTripAcrossSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	h, err := CreateHistory(path, "s1", HistoryOptions{Table: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	id1 := h.Call(Op{Kind: KindList, Worker: 2, Row: "r1", Prev: "r0"})
	id2 := h.Call(Op{Kind: KindCAS, Worker: 3, Row: "c", From: 4, To: 5, Token: "tok"})
	h.Return(id1, Acked, 0, false, nil)
	h.Return(id2, Failed, 0, true, nil)
	h.Call(Op{Kind: KindIncr, Row: "n"}) // never returns: the process "died"
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash tore the last line of the first session.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"t":"ret","id":3,"ou`)
	f.Close()
	h, err = CreateHistory(path, "s2", HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := h.Call(Op{Kind: KindIncr, Row: "n"})
	h.Return(id, Unknown, 0, false, status.Error(codes.Unavailable, "gone"))
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	got, err := ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 2 || got.Sessions[0].Tag != "s1" || got.Sessions[0].Table != "verify" || got.Sessions[1].Tag != "s2" {
		t.Fatalf("sessions %+v", got.Sessions)
	}
	if got.Torn != 1 {
		t.Errorf("torn lines %d, want 1", got.Torn)
	}
	if len(got.Ops) != 4 {
		t.Fatalf("%d ops, want 4: %+v", len(got.Ops), got.Ops)
	}
	l, c, pend, u := got.Ops[0], got.Ops[1], got.Ops[2], got.Ops[3]
	if l.Kind != KindList || l.Row != "r1" || l.Prev != "r0" || l.Worker != 2 || l.Outcome != Acked || l.Return < l.Call || l.Call == 0 {
		t.Errorf("list op %+v", l)
	}
	if c.Kind != KindCAS || c.From != 4 || c.To != 5 || c.Token != "tok" || c.Outcome != Failed || !c.NoMatch {
		t.Errorf("cas op %+v", c)
	}
	if pend.Outcome != Pending || pend.Return != 0 || !pend.Ambiguous() {
		t.Errorf("pending op %+v", pend)
	}
	if u.Session != 1 || u.Outcome != Unknown || !strings.Contains(u.Err, "gone") || u.Call <= l.Call {
		t.Errorf("second session's op %+v", u)
	}
}

func TestHistoryRejectsDamageInTheMiddle(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"malformed line", `{"t":"session","session":"s","base":1}` + "\n" + `garbage` + "\n" + `{"t":"call","id":1,"k":"list","at":5}` + "\n"},
		{"return without call", `{"t":"session","session":"s","base":1}` + "\n" + `{"t":"ret","id":9,"out":"ack","at":5}` + "\n"},
		{"op before session", `{"t":"call","id":1,"k":"list","at":5}` + "\n"},
		{"bad outcome", `{"t":"session","session":"s","base":1}` + "\n" + `{"t":"call","id":1,"k":"list","at":5}` + "\n" + `{"t":"ret","id":1,"out":"maybe","at":6}` + "\n"},
	} {
		if _, err := DecodeHistory(strings.NewReader(tc.text)); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err     error
		retried bool
		want    Outcome
	}{
		{nil, false, Acked},
		{status.Error(codes.InvalidArgument, "bad"), true, Failed},
		{status.Error(codes.NotFound, "no table"), false, Failed},
		{status.Error(codes.FailedPrecondition, "not serving"), false, Failed},
		// An idempotent write may have been applied by an earlier attempt.
		{status.Error(codes.FailedPrecondition, "not serving"), true, Unknown},
		{status.Error(codes.Unavailable, "lease ran out"), false, Unknown},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: connection refused"`), false, Failed},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: connection refused"`), true, Unknown},
		{status.Error(codes.DeadlineExceeded, "deadline"), false, Unknown},
		{status.Error(codes.ResourceExhausted, "slow down"), false, Unknown},
		{status.Error(codes.Internal, "bug"), false, Unknown},
		{errors.New("plain"), false, Unknown},
	} {
		if got := Classify(tc.err, tc.retried); got != tc.want {
			t.Errorf("Classify(%v, retried=%v) = %q, want %q", tc.err, tc.retried, got, tc.want)
		}
	}
}
