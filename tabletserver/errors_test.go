package tabletserver

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
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/wal"
)

// TestErrorCodes pins the mapping documented on codeOf (docs/CONTRACTS.md §5),
// with the errors wrapped the way the engine and the server wrap them.
func TestErrorCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("tablet users/t1: %w", err) }
	live := context.Background()
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
		{name: "bad request", err: wrap(cell.Invalidf("row key is empty")), want: codes.InvalidArgument},
		{name: "unknown family", err: wrap(tablet.ErrUnknownFamily), want: codes.NotFound},
		{name: "no such etcd key", err: wrap(meta.ErrNotFound), want: codes.NotFound},
		{name: "row outside the tablet", err: wrap(tablet.ErrOutOfRange), want: codes.FailedPrecondition},
		{name: "not serving", err: notServing("users", "t1", nil, "moved"), want: codes.FailedPrecondition},
		{name: "fenced", err: wrap(ErrFenced), want: codes.FailedPrecondition},
		{name: "tablet closed", err: wrap(tablet.ErrClosed), want: codes.FailedPrecondition},
		{name: "not assigned here", err: wrap(ErrNotAssigned), want: codes.FailedPrecondition},
		{name: "lost an etcd race", err: wrap(meta.ErrConflict), want: codes.FailedPrecondition},
		{name: "no split key", err: wrap(tablet.ErrNoSplitKey), want: codes.FailedPrecondition},
		{name: "a newer owner wrote the folder", err: wrap(tablet.ErrNewerOwner), want: codes.FailedPrecondition},
		{name: "memory past the hard limit", err: wrap(tablet.ErrResourceExhausted), want: codes.ResourceExhausted},
		// A full memtable whose flush failed (tablet/stall.go): back-pressure,
		// unless the flush failed because the server is fenced.
		{name: "memtable full, flush failed", err: wrap(fmt.Errorf("%w: the memtable is full and flushing it failed: %w",
			tablet.ErrResourceExhausted, errors.New("tablet: create sstable a/000007.sst: no space left on device"))), want: codes.ResourceExhausted},
		{name: "memtable full, flush refused while fenced", err: wrap(fmt.Errorf("%w: the memtable is full and flushing it failed: %w",
			tablet.ErrResourceExhausted, fmt.Errorf("%w: flush: %w", tablet.ErrGuardRefused, ErrFenced))), want: codes.FailedPrecondition},

		// Transient: retry (idempotent calls) after re-locating.
		{name: "lease ran out mid-write", err: wrap(ErrOutcomeUnknown), want: codes.Unavailable},
		{name: "server closed", err: wrap(ErrClosed), want: codes.Unavailable},
		{name: "etcd has no leader", err: wrap(rpctypes.ErrNoLeader), want: codes.Unavailable},
		{name: "etcd request timed out", err: wrap(rpctypes.ErrTimeout), want: codes.Unavailable},
		{name: "etcd unreachable", err: wrap(status.Error(codes.Unavailable, "connection refused")), want: codes.Unavailable},
		{name: "deadline the server set on etcd", err: wrap(context.DeadlineExceeded), want: codes.Unavailable},
		{name: "server shutting down", err: wrap(context.Canceled), want: codes.Unavailable},

		// The caller's own context ended.
		{name: "caller cancelled", ctx: cancelled, err: wrap(context.Canceled), want: codes.Canceled},
		{name: "caller's deadline", ctx: expired, err: wrap(context.DeadlineExceeded), want: codes.DeadlineExceeded},

		// Damaged data, from every layer: one marker, INTERNAL.
		{name: "sstable corrupt", err: wrap(sstable.ErrCorrupt), want: codes.Internal},
		{name: "commit log corrupt", err: wrap(wal.ErrCorrupt), want: codes.Internal},
		{name: "manifest corrupt", err: wrap(manifest.ErrCorrupt), want: codes.Internal},
		{name: "tablet corrupt", err: wrap(tablet.ErrCorrupt), want: codes.Internal},
		{name: "etcd record corrupt", err: wrap(meta.ErrCorrupt), want: codes.Internal},
		{name: "encoded key corrupt", err: wrap(cell.ErrCorruptKey), want: codes.Internal},
		{name: "corrupt even if the caller gave up", ctx: cancelled, err: wrap(sstable.ErrCorrupt), want: codes.Internal},
		{name: "folder opened twice (a bug)", err: wrap(ErrAlreadyOpen), want: codes.Internal},

		// Not classified: not retryable, outcome unknown.
		{name: "unknown error", err: wrap(errors.New("write 000012.sst: input/output error")), want: codes.Unknown},
		{name: "commit log failed earlier", err: fmt.Errorf("%w: %w", tablet.ErrFailed, errors.New("no space left on device")), want: codes.FailedPrecondition},
		{name: "commit log write failed", err: fmt.Errorf("%w: sync: %w", tablet.ErrLogFailed, errors.New("input/output error")), want: codes.Unavailable},
		{name: "an unclassified I/O error", err: fmt.Errorf("tablet: %w", errors.New("input/output error")), want: codes.Unknown},
		{name: "other etcd error", err: wrap(rpctypes.ErrRequestTooLarge), want: codes.Unknown},
	}
	for _, c := range cases {
		ctx := c.ctx
		if ctx == nil {
			ctx = live
		}
		if got := codeOf(ctx, c.err); got != c.want {
			t.Errorf("%s: codeOf(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
		if got := status.Code(toStatus(ctx, c.err, "users", "t1", nil)); got != c.want {
			t.Errorf("%s: toStatus(%v) has code %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestNotServingCarriesItsDetail: the routing answer keeps the detail the
// client re-locates with, and a status passed through keeps its own.
func TestNotServingCarriesItsDetail(t *testing.T) {
	ctx := context.Background()
	err := toStatus(ctx, fmt.Errorf("resolve: %w", notServing("users", "t1", []byte("r"), "moved")), "", "", nil)
	st := status.Convert(err)
	var found bool
	for _, d := range st.Details() {
		if ns, ok := d.(*tabulapb.NotServing); ok && ns.GetTabletId() == "t1" && string(ns.GetRowKey()) == "r" {
			found = true
		}
	}
	if st.Code() != codes.FailedPrecondition || !found {
		t.Fatalf("not serving became %v with details %v, want FAILED_PRECONDITION with a NotServing detail", st.Code(), st.Details())
	}
	if again := toStatus(ctx, err, "", "", nil); status.Convert(again).Code() != codes.FailedPrecondition || len(status.Convert(again).Details()) != 1 {
		t.Fatalf("converting a status again changed it: %v", again)
	}
}
