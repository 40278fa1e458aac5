package testkit

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WantCode fails the test at once unless err is a gRPC status with code
// whose message contains contains ("" matches any message). what names
// the call in the failure ("" for none), which a table-driven test needs:
// the line alone does not say which case failed.
func WantCode(t testing.TB, what string, err error, code codes.Code, contains string) {
	t.Helper()
	prefix := ""
	if what != "" {
		prefix = what + ": "
	}
	if got := status.Code(err); got != code {
		t.Fatalf("%sgot %v (%v), want code %v", prefix, got, err, code)
		return
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, contains) {
		t.Fatalf("%smessage %q does not mention %q", prefix, msg, contains)
	}
}
