package master

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/meta"
)

// Sentinel errors; check them with errors.Is.
var (
	// ErrNotLeader answers admin writes on a standby (UNAVAILABLE).
	ErrNotLeader = errors.New("master: not the leader")
	// ErrNotFound means no such table, family or tablet (NOT_FOUND).
	ErrNotFound = errors.New("master: not found")
	// ErrExists means the table or family already exists (ALREADY_EXISTS).
	ErrExists = errors.New("master: already exists")
	// ErrNotReady means the cluster cannot do it right now, e.g. no live
	// tablet server or a tablet not assigned yet (UNAVAILABLE; retry).
	ErrNotReady = errors.New("master: not ready")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("master: closed")
	// ErrProtected refuses deleting a table with deletion protection, or
	// one of its families (FAILED_PRECONDITION: the request is right, the
	// table's state forbids it until the protection is lifted).
	ErrProtected = errors.New("master: deletion protection")
)

func notFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

func existsf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrExists, fmt.Sprintf(format, args...))
}

// protectedf refuses what deletion protection forbids on table, saying
// how to lift it.
func protectedf(table, what string) error {
	return fmt.Errorf("%w: %s: table %s is protected from deletion; lift it first with `tabula table unprotect %s` "+
		"(SetDeletionProtection, or the Bigtable API's UpdateTable of deletion_protection)", ErrProtected, what, table, table)
}

func notReadyf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotReady, fmt.Sprintf(format, args...))
}

// toStatus is the one place where master errors become gRPC status
// errors. ctx is the call's context, to tell its own end from a timeout
// the master set on etcd or on a tablet server. The codes:
//
//   - INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS: the request is wrong.
//   - FAILED_PRECONDITION: the table's deletion protection forbids it.
//   - UNAVAILABLE: retry, here or at another master: not the leader, not
//     ready (no server yet), a guarded etcd update lost a race, closed,
//     etcd unreachable or timed out, or a deadline the master set on a
//     dependency (not the caller's) passed. Like a tablet server's
//     UNAVAILABLE, an admin change answered this way may or may not have
//     been made.
//   - INTERNAL: a corrupt etcd record (corruption.ErrCorrupt); retrying
//     reads the same record, an operator has to look.
//   - UNKNOWN: anything not classified above. It is not retried: the
//     master cannot say whether retrying helps, nor whether a change was
//     made. (It used to be UNAVAILABLE, which had clients retry faults
//     that do not go away.)
//   - CANCELED, DEADLINE_EXCEEDED: only when the caller's own context
//     ended.
//
// A tablet server's answer passed through keeps its code and details,
// except a timeout the master set on the call, which is UNAVAILABLE.
func toStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	code := codeOf(ctx, err)
	if st, ok := status.FromError(err); ok && st.Code() == code {
		return err // already a status, e.g. passed through from a tablet server
	}
	return status.Error(code, err.Error())
}

// codeOf classifies an error of a call under ctx; see toStatus.
func codeOf(ctx context.Context, err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case isContextError(err) && ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Code()
	case isContextError(err):
		return codes.Unavailable // a deadline the master set, or shutdown
	case errors.Is(err, cell.ErrInvalid), errors.Is(err, auth.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, ErrNotFound), errors.Is(err, meta.ErrNotFound), errors.Is(err, auth.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, ErrExists):
		return codes.AlreadyExists
	case errors.Is(err, ErrProtected), errors.Is(err, meta.ErrNamespaceNotEmpty):
		return codes.FailedPrecondition
	case errors.Is(err, meta.ErrNamespaceFull):
		return codes.ResourceExhausted
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNotReady), errors.Is(err, meta.ErrConflict), errors.Is(err, ErrClosed):
		return codes.Unavailable
	case errors.Is(err, corruption.ErrCorrupt):
		return codes.Internal
	}
	if c, ok := meta.EtcdErrorCode(err); ok {
		// etcd's "no leader", "leader changed", "request timed out" are
		// UNAVAILABLE; its other errors are not the caller's to retry.
		if c == codes.Unavailable {
			return codes.Unavailable
		}
		return codes.Unknown
	}
	if st, ok := status.FromError(err); ok {
		return st.Code() // a tablet server's answer, or an unreachable etcd
	}
	return codes.Unknown
}

// isContextError reports whether err is a context's end: the error itself
// or a status made from one (a tablet server call that timed out).
func isContextError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	st, ok := status.FromError(err)
	return ok && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded)
}
