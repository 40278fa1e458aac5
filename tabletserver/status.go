package tabletserver

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/tabletserver/tablet/commitlog"
	"github.com/tabuladb/tabula/tabletserver/tablet/manifest"
)

// Sentinel errors of the server; check them with errors.Is.
var (
	// ErrNotServing means the server does not serve the named tablet at
	// the named epoch (or the row is outside it). Clients re-locate.
	ErrNotServing = errors.New("tabletserver: not serving")
	// ErrFenced means the server could not renew its lease in time and
	// stopped serving until it registers again.
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

// toStatus is THE place where errors become gRPC status errors. table, id
// and row say what the call was about, for NotServing details.
func toStatus(err error, table, id string, row []byte) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codeOf(err)
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
		errors.Is(err, tablet.ErrOutOfRange) || errors.Is(err, tablet.ErrClosed)
}

// codeOf classifies an error by what it wraps.
func codeOf(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case isNotServing(err), errors.Is(err, ErrNotAssigned), errors.Is(err, meta.ErrConflict):
		return codes.FailedPrecondition
	case errors.Is(err, cell.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, tablet.ErrUnknownFamily), errors.Is(err, meta.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, tablet.ErrResourceExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, tablet.ErrNoSplitKey):
		return codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, tablet.ErrCorrupt), errors.Is(err, meta.ErrCorrupt),
		errors.Is(err, sstable.ErrCorrupt), errors.Is(err, commitlog.ErrCorrupt), errors.Is(err, manifest.ErrCorrupt):
		// Damaged files are not retryable: retrying would read the same
		// bytes. An operator has to look (the message names file and block).
		return codes.Internal
	case errors.Is(err, ErrClosed), errors.Is(err, ErrOutcomeUnknown):
		return codes.Unavailable
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unavailable
}

// entryStatus converts an error to a MutateRows entry.
func entryStatus(index int, err error, table, id string, row []byte) *tabulapb.MutateRowsResponse_Entry {
	e := &tabulapb.MutateRowsResponse_Entry{Index: int64(index)}
	if err == nil {
		return e
	}
	st := status.Convert(toStatus(err, table, id, row))
	e.Code, e.Message = int32(st.Code()), st.Message()
	for _, d := range st.Details() {
		if ns, ok := d.(*tabulapb.NotServing); ok {
			e.NotServing = ns
		}
	}
	return e
}
