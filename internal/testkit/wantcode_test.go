package testkit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recorder is a testing.TB that records a Fatalf instead of stopping the
// test, so that WantCode's failures can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestWantCode(t *testing.T) {
	notFound := status.Error(codes.NotFound, "master: no table \"users\"")
	for _, tc := range []struct {
		name     string
		err      error
		code     codes.Code
		contains string
		fails    string // "" if WantCode must pass
	}{
		{"code and message", notFound, codes.NotFound, "users", ""},
		{"any message", notFound, codes.NotFound, "", ""},
		{"a wrapped status", fmt.Errorf("client: %w", notFound), codes.NotFound, "users", ""},
		{"another code", notFound, codes.InvalidArgument, "", "want code InvalidArgument"},
		{"another message", notFound, codes.NotFound, "orders", `does not mention "orders"`},
		{"no error", nil, codes.NotFound, "", "got OK"},
		{"not a status", errors.New("disk on fire"), codes.NotFound, "", "got Unknown"},
	} {
		r := &recorder{TB: t}
		WantCode(r, tc.name, tc.err, tc.code, tc.contains)
		switch {
		case tc.fails == "" && r.failed != "":
			t.Errorf("%s: failed with %q, want a pass", tc.name, r.failed)
		case tc.fails != "" && !strings.Contains(r.failed, tc.fails):
			t.Errorf("%s: failure %q, want one mentioning %q", tc.name, r.failed, tc.fails)
		case tc.fails != "" && !strings.HasPrefix(r.failed, tc.name+": "):
			t.Errorf("%s: failure %q does not start with the call's name", tc.name, r.failed)
		}
	}
}
