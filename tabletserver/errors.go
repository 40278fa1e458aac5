package tabletserver

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// Sentinel errors of the server; check them with errors.Is.
var (
	// ErrNotServing means the server does not serve the named tablet at
	// the named epoch (or the row is outside it). Clients re-locate.
	ErrNotServing = errors.New("tabletserver: not serving")
	// ErrFenced means the server could not renew its lease in time: it is
	// paused until a renewal of the same lease succeeds, or it gave its
	// tablets up (the lease is gone) and registers again (lease.go).
	ErrFenced = errors.New("tabletserver: fenced: lease not renewed in time")
	// ErrNotAssigned means etcd does not assign the tablet to this server
	// at the requested epoch.
	ErrNotAssigned = errors.New("tabletserver: tablet not assigned here")
	// ErrOutcomeUnknown means a write finished after the server's lease
	// may have expired, so it is not acknowledged: the tablet's next owner
	// may or may not have replayed it. Clients retry it only if it is
	// idempotent (UNAVAILABLE, not "not serving").
	ErrOutcomeUnknown = errors.New("tabletserver: the lease ran out before the write was acknowledged; it may or may not have been applied")
	// ErrAlreadyOpen means an engine of this server still has the
	// tablet's folder open (a bug if it happens: one engine per folder).
	ErrAlreadyOpen = errors.New("tabletserver: tablet folder already open")
	// ErrClosed is returned by calls on a closed server.
	ErrClosed = errors.New("tabletserver: closed")
)

// notServingError says which tablet (and row) is not served here and why.
type notServingError struct {
	table, tablet string
	row           []byte
	reason        string
	cause         error
}

func (e *notServingError) Error() string {
	return fmt.Sprintf("tabletserver: not serving tablet %s/%s: %s", e.table, e.tablet, e.reason)
}

func (e *notServingError) Is(target error) bool { return target == ErrNotServing }

func (e *notServingError) Unwrap() error { return e.cause }

func notServing(table, id string, row []byte, reason string) error {
	return &notServingError{table: table, tablet: id, row: row, reason: reason}
}

// toStatus is THE place where errors become gRPC status errors. ctx is
// the call's context (to tell its own end from a dependency's timeout);
// table, id and row say what the call was about, for NotServing details.
func toStatus(ctx context.Context, err error, table, id string, row []byte) error {
	if err == nil {
		return nil
	}
	code := codeOf(ctx, err)
	if st, ok := status.FromError(err); ok && st.Code() == code {
		return err // already a status: keep its details
	}
	if !isNotServing(err) {
		return status.Error(code, err.Error())
	}
	ns := &tabulapb.NotServing{Table: table, TabletId: id, RowKey: row, Reason: err.Error()}
	var nse *notServingError
	if errors.As(err, &nse) {
		ns = &tabulapb.NotServing{Table: nse.table, TabletId: nse.tablet, RowKey: nse.row, Reason: nse.reason}
	}
	st, derr := status.New(code, err.Error()).WithDetails(ns)
	if derr != nil {
		return status.Error(code, err.Error())
	}
	return st.Err()
}

// isNotServing reports whether err means "this tablet (at this epoch, or
// this row) is not served here": the client re-locates and retries.
func isNotServing(err error) bool {
	return errors.Is(err, ErrNotServing) || errors.Is(err, ErrFenced) ||
		errors.Is(err, tablet.ErrOutOfRange) || errors.Is(err, tablet.ErrClosed) ||
		errors.Is(err, tablet.ErrFailed) // leaving service; nothing applied
}

// codeOf classifies an error of a call under ctx by what it wraps. Each
// code has one meaning for clients (client.serverError acts on them):
//
//   - FAILED_PRECONDITION: refused before anything was applied; with a
//     NotServing detail the client re-locates and retries any call.
//   - INVALID_ARGUMENT, NOT_FOUND: the request is wrong; never retried.
//   - RESOURCE_EXHAUSTED: back-pressure; idempotent calls are retried.
//   - UNAVAILABLE: a transient condition, and a write's outcome may be
//     unknown: the server is closing, its lease ran out mid-write
//     (ErrOutcomeUnknown), etcd is unreachable or timed out, or a
//     deadline the server set on a dependency (not the caller's) passed.
//     The client re-locates and retries idempotent calls.
//   - INTERNAL: damaged stored data (anything wrapping
//     corruption.ErrCorrupt) or a broken invariant (ErrAlreadyOpen).
//     Retrying reads the same bytes, so it is not retried; an operator
//     has to look (the message names the file). INTERNAL rather than
//     DATA_LOSS: a bad block or record shows that bytes are damaged, not
//     that the cells they held are gone for good (the file may be
//     restored, the log may be replayed by a later owner), and DATA_LOSS
//     would tell the caller more than the server knows.
//   - UNKNOWN: everything not classified above (an I/O error, a bug).
//     The server cannot say whether retrying helps, nor whether a write
//     was applied (it may have reached the commit log), so clients do
//     not retry it. (It used to be UNAVAILABLE: clients kept re-locating
//     and retrying faults that do not go away, such as a failed commit
//     log.)
//   - CANCELED, DEADLINE_EXCEEDED: only when the caller's own context
//     ended.
func codeOf(ctx context.Context, err error) codes.Code {
	etcdCode, isEtcd := meta.EtcdErrorCode(err)
	switch {
	case err == nil:
		return codes.OK
	case isContextError(err) && ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Code()
	case isNotServing(err), errors.Is(err, ErrNotAssigned), errors.Is(err, meta.ErrConflict),
		errors.Is(err, tablet.ErrNoSplitKey), errors.Is(err, tablet.ErrNewerOwner):
		return codes.FailedPrecondition
	case errors.Is(err, cell.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, tablet.ErrUnknownFamily), errors.Is(err, meta.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, tablet.ErrResourceExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, tablet.ErrNoTablet):
		return codes.DataLoss // the tablet's files are gone; retrying elsewhere will not bring them back
	case errors.Is(err, corruption.ErrCorrupt), errors.Is(err, ErrAlreadyOpen):
		return codes.Internal
	case errors.Is(err, ErrClosed), errors.Is(err, ErrOutcomeUnknown), errors.Is(err, tablet.ErrLogFailed), isStalled(err):
		return codes.Unavailable
	case isContextError(err):
		// The caller's context is live: the deadline was one the server
		// set on etcd (a split commit), or the server is shutting down.
		return codes.Unavailable
	case isEtcd:
		// etcd's own "no leader", "leader changed", "request timed out"
		// are UNAVAILABLE; its other errors are not the caller's to retry.
		if etcdCode == codes.Unavailable {
			return codes.Unavailable
		}
		return codes.Unknown
	}
	if st, ok := status.FromError(err); ok {
		return st.Code() // e.g. UNAVAILABLE from an unreachable etcd
	}
	return codes.Unknown
}

// isContextError reports whether err is a context's end: the error itself
// or a status made from one.
func isContextError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	st, ok := status.FromError(err)
	return ok && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded)
}

// entryStatus converts an error to a MutateRows entry.
func entryStatus(ctx context.Context, index int, err error, table, id string, row []byte) *tabulapb.MutateRowsResponse_Entry {
	e := &tabulapb.MutateRowsResponse_Entry{Index: int64(index)}
	if err == nil {
		return e
	}
	st := status.Convert(toStatus(ctx, err, table, id, row))
	e.Code, e.Message = int32(st.Code()), st.Message()
	for _, d := range st.Details() {
		if ns, ok := d.(*tabulapb.NotServing); ok {
			e.NotServing = ns
		}
	}
	return e
}
