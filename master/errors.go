package master

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
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
)

func notFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

func existsf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrExists, fmt.Sprintf(format, args...))
}

func notReadyf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotReady, fmt.Sprintf(format, args...))
}

// toStatus is the one place where master errors become gRPC status errors.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // already a status, e.g. passed through from a tablet server
	}
	var code codes.Code
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	case errors.Is(err, cell.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, ErrNotFound), errors.Is(err, meta.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, ErrExists):
		code = codes.AlreadyExists
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNotReady), errors.Is(err, meta.ErrConflict), errors.Is(err, ErrClosed):
		code = codes.Unavailable
	case errors.Is(err, meta.ErrCorrupt):
		code = codes.Internal
	default:
		code = codes.Unavailable // etcd or network trouble
	}
	return status.Error(code, err.Error())
}
