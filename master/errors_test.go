package master

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// TestErrorCodes pins the mapping documented on toStatus, with errors
// wrapped the way the master wraps them.
func TestErrorCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("table users: %w", err) }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -1)
	defer cancel2()
	cases := []struct {
		name string
		ctx  context.Context // the call's; live unless set
		err  error
		want codes.Code
	}{
		{name: "bad request", err: wrap(cell.Invalidf("limit -1 is negative")), want: codes.InvalidArgument},
		{name: "no such table", err: notFoundf("table %s", "users"), want: codes.NotFound},
		{name: "no such etcd key", err: wrap(meta.ErrNotFound), want: codes.NotFound},
		{name: "table exists", err: existsf("table %s", "users"), want: codes.AlreadyExists},

		// Retry, here or at another master.
		{name: "not the leader", err: fmt.Errorf("%w (leader is m2)", ErrNotLeader), want: codes.Unavailable},
		{name: "not ready", err: notReadyf("no live tablet server"), want: codes.Unavailable},
		{name: "lost an etcd race", err: wrap(meta.ErrConflict), want: codes.Unavailable},
		{name: "closed", err: wrap(ErrClosed), want: codes.Unavailable},
		{name: "etcd has no leader", err: wrap(rpctypes.ErrNoLeader), want: codes.Unavailable},
		{name: "etcd request timed out", err: wrap(rpctypes.ErrTimeout), want: codes.Unavailable},
		{name: "etcd unreachable", err: wrap(status.Error(codes.Unavailable, "connection refused")), want: codes.Unavailable},
		{name: "deadline the master set on etcd", err: wrap(context.DeadlineExceeded), want: codes.Unavailable},
		{name: "tablet server call timed out", err: wrap(status.Error(codes.DeadlineExceeded, "context deadline exceeded")), want: codes.Unavailable},

		// The caller's own context ended.
		{name: "caller cancelled", ctx: cancelled, err: wrap(context.Canceled), want: codes.Canceled},
		{name: "caller's deadline", ctx: expired, err: wrap(context.DeadlineExceeded), want: codes.DeadlineExceeded},

		// A tablet server's answer keeps its code.
		{name: "tablet server's refusal", err: status.Error(codes.ResourceExhausted, "flushes behind"), want: codes.ResourceExhausted},
		{name: "tablet server found corruption", err: status.Error(codes.Internal, "sstable: corrupt"), want: codes.Internal},

		{name: "corrupt etcd record", err: wrap(meta.ErrCorrupt), want: codes.Internal},
		{name: "unknown error", err: wrap(errors.New("something unexpected")), want: codes.Unknown},
		{name: "other etcd error", err: wrap(rpctypes.ErrRequestTooLarge), want: codes.Unknown},
	}
	for _, c := range cases {
		ctx := c.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if got := status.Code(toStatus(ctx, c.err)); got != c.want {
			t.Errorf("%s: toStatus(%v) has code %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestPassedThroughStatusKeepsItsDetails: a tablet server's "not serving"
// reaches the caller with its detail.
func TestPassedThroughStatusKeepsItsDetails(t *testing.T) {
	st, err := status.New(codes.FailedPrecondition, "moved").WithDetails(&tabulapb.NotServing{Table: "users", TabletId: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	got := status.Convert(toStatus(context.Background(), st.Err()))
	if got.Code() != codes.FailedPrecondition || len(got.Details()) != 1 {
		t.Fatalf("passed through as %v with details %v", got.Code(), got.Details())
	}
}
