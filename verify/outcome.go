package verify

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// notDialed is in the message of gRPC's UNAVAILABLE for a call it failed
// because no connection to the server could be made.
const notDialed = "Error while dialing"

// Classify turns the error of a call into its outcome. It errs towards
// Unknown: calling an applied write Failed would make the checker report a
// violation the cluster did not commit, while calling a refused one Unknown
// only widens what the checker accepts.
//
// retried says whether the client may have sent the call more than once
// (idempotent mutations are retried after UNAVAILABLE): then only an error
// the client reports before sending anything, or that every attempt would
// have got alike (INVALID_ARGUMENT, NOT_FOUND), proves that no attempt was
// applied. For a call the client sends again only after a refusal
// (ReadModifyWrite, CheckAndMutate: retried after "not serving" only), a
// final FAILED_PRECONDITION means every attempt was refused before it was
// applied, and so does an UNAVAILABLE that gRPC gives without sending the
// call: the connection to the server could not be made ("Error while
// dialing": gRPC fails such calls fast, before they reach a transport).
func Classify(err error, retried bool) Outcome {
	if err == nil {
		return Acked
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Unknown
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.OutOfRange, codes.Unimplemented, codes.PermissionDenied, codes.Unauthenticated:
		return Failed
	case codes.FailedPrecondition:
		if retried {
			return Unknown
		}
		return Failed
	case codes.Unavailable:
		if !retried && strings.Contains(status.Convert(err).Message(), notDialed) {
			return Failed
		}
	}
	// UNAVAILABLE, DEADLINE_EXCEEDED, CANCELED, RESOURCE_EXHAUSTED,
	// INTERNAL, UNKNOWN, ABORTED, DATA_LOSS: the call may have been applied.
	return Unknown
}
