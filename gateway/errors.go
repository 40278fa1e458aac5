package gateway

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
)

// toStatus turns an error of the Tabula client into the status a Bigtable
// client expects. The client's errors are already gRPC statuses whose codes
// have the meanings Bigtable gives them (NOT_FOUND, INVALID_ARGUMENT,
// RESOURCE_EXHAUSTED, UNAVAILABLE are retried by Bigtable clients exactly
// where they are safe), so they pass through; validation errors of the
// shared vocabulary become INVALID_ARGUMENT and context ends their codes.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, cell.ErrInvalid):
		return status.Error(codes.InvalidArgument, trimInvalid(err))
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// trimInvalid drops the "cell: invalid argument: " head cell.Invalidf adds, since
// the status code already says it.
func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), cell.ErrInvalid.Error()+": ")
}

// invalidf is an INVALID_ARGUMENT status.
func invalidf(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// notFoundf is a NOT_FOUND status.
func notFoundf(format string, args ...any) error {
	return status.Errorf(codes.NotFound, format, args...)
}

// unimplemented is the answer to an operation Tabula does not have; it
// names the operation so nobody mistakes it for a silent success.
func unimplemented(op, why string) error {
	return status.Errorf(codes.Unimplemented, "%s is not supported by the Tabula gateway: %s", op, why)
}
