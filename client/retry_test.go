package client

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestServerErrorRetriesOnlyTransientAnswers pins what the client does
// with each code a tablet server answers (tabletserver's codeOf): damaged
// data (INTERNAL) and unclassified failures (UNKNOWN) are returned at
// once, never retried; only "not serving", UNAVAILABLE and
// RESOURCE_EXHAUSTED are.
func TestServerErrorRetriesOnlyTransientAnswers(t *testing.T) {
	notServing, err := status.New(codes.FailedPrecondition, "moved").WithDetails(&tabulapb.NotServing{Table: "t", TabletId: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                        string
		err                         error
		retryIdempotent, retryOther bool
		evict                       bool
	}{
		{"not serving", notServing.Err(), true, true, true},
		{"unavailable", status.Error(codes.Unavailable, "closing"), true, false, true},
		{"resource exhausted", status.Error(codes.ResourceExhausted, "flushes behind"), true, false, false},
		{"corrupt data", status.Error(codes.Internal, "sstable: corrupt: 000012.sst"), false, false, false},
		{"unclassified", status.Error(codes.Unknown, "input/output error"), false, false, false},
		{"refused without detail", status.Error(codes.FailedPrecondition, "no split key"), false, false, false},
		{"bad request", status.Error(codes.InvalidArgument, "row key is empty"), false, false, false},
		{"no such family", status.Error(codes.NotFound, "family x"), false, false, false},
		{"server saw a deadline", status.Error(codes.DeadlineExceeded, "deadline"), false, false, false},
	}
	for _, c := range cases {
		retry, evict := serverError(c.err, true)
		if retry != c.retryIdempotent || evict != c.evict {
			t.Errorf("%s, idempotent: retry %v evict %v, want %v %v", c.name, retry, evict, c.retryIdempotent, c.evict)
		}
		if retry, _ := serverError(c.err, false); retry != c.retryOther {
			t.Errorf("%s, not idempotent: retry %v, want %v", c.name, retry, c.retryOther)
		}
	}
}
