package main

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestExplainHintsFollowTheCodes: each code a server answers gets the
// hint that fits its meaning; damaged data and unclassified failures are
// not presented as "retry".
func TestExplainHintsFollowTheCodes(t *testing.T) {
	cases := []struct {
		code codes.Code
		want string // in the hint
	}{
		{codes.Unavailable, "then retry"},
		{codes.FailedPrecondition, "retry in a few seconds"},
		{codes.ResourceExhausted, "retry later"},
		{codes.Internal, "retrying will not help"},
		{codes.Unknown, "may or may not have been applied"},
	}
	for _, c := range cases {
		msg, hint := explain(status.Error(c.code, "tablet users/t1: boom"))
		if !strings.Contains(hint, c.want) || !strings.Contains(msg, "boom") {
			t.Errorf("%v: message %q, hint %q; want the message kept and a hint saying %q", c.code, msg, hint, c.want)
		}
	}
	// A refusal that waiting does not cure is not presented as "retry".
	for msg, want := range map[string]string{
		"meta: namespace not empty: nsa holds 1 table(s) (nsa:t...): delete them first, or pass --recursive": "--recursive",
		"master: deletion protection: the default namespace cannot be deleted":                               "always exists",
	} {
		_, hint := explain(status.Error(codes.FailedPrecondition, msg))
		if !strings.Contains(hint, want) || strings.Contains(hint, "retry") {
			t.Errorf("%q: hint %q, want one saying %q and no retry", msg, hint, want)
		}
	}
}
