package locator

import (
	"context"
	"errors"

	"github.com/tabuladb/tabula/api/tabulapb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrUnassigned says the master knows the tablet but has not assigned it
// to a server yet (or is moving it); retrying after a pause is right.
var ErrUnassigned = errors.New("locator: tablet is not assigned to a server yet")

// ErrClosed is returned by calls on a closed Locator.
var ErrClosed = errors.New("locator: closed")

// NotServingOf returns the NotServing detail of a tablet server's
// FAILED_PRECONDITION answer. A FAILED_PRECONDITION without the detail is
// not a routing error (it is the server refusing the request itself).
func NotServingOf(err error) (*tabulapb.NotServing, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return nil, false
	}
	for _, d := range st.Details() {
		if ns, ok := d.(*tabulapb.NotServing); ok {
			return ns, true
		}
	}
	return nil, false
}

// IsUnavailable reports whether err says the peer could not be reached or
// asked to be retried later (UNAVAILABLE).
func IsUnavailable(err error) bool {
	return status.Code(err) == codes.Unavailable
}

// isContextStatus reports whether err is a status made from a context
// error (the call's context ended), rather than an answer.
func isContextStatus(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	c := status.Code(err)
	return c == codes.Canceled || c == codes.DeadlineExceeded
}

// isAuthStatus reports whether err refuses the caller's credentials
// rather than answers the lookup.
func isAuthStatus(err error) bool {
	c := status.Code(err)
	return c == codes.Unauthenticated || c == codes.PermissionDenied
}
