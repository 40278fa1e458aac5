package quota

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Status returns the gRPC status of a *Refusal in err's chain:
// RESOURCE_EXHAUSTED naming the quota, with a google.rpc.RetryInfo detail
// (the delay after which the request may be admitted) and a
// google.rpc.QuotaFailure naming the quota as "<scope>:<name>" (the
// details Bigtable's clients read). Any other error is returned as is.
func Status(err error) error {
	var r *Refusal
	if !errors.As(err, &r) {
		return err
	}
	st := status.New(codes.ResourceExhausted, r.Error())
	d, derr := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(r.Delay)},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     string(r.Key.Scope) + ":" + r.Key.Name,
			Description: r.Limit,
		}}},
	)
	if derr != nil {
		return st.Err()
	}
	return d.Err()
}
