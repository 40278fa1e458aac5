package s3fs

import (
	"errors"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/tabuladb/tabula/vfs"
)

// A store that throttles (503 SlowDown, after the client's own retries)
// gives an error marked vfs.ErrSlowDown, so the caller backs off further;
// other refusals are not marked.
func TestThrottlingIsMarkedSlowDown(t *testing.T) {
	f := &FS{refused: "the store refused the credentials"}
	for _, tc := range []struct {
		code string
		slow bool
	}{
		{"SlowDown", true}, {"SlowDownWrite", true}, {"Throttling", true}, {"RequestLimitExceeded", true},
		{"InternalError", false}, {"AccessDenied", false}, {"NoSuchKey", false},
	} {
		err := f.explain(minio.ErrorResponse{Code: tc.code, StatusCode: 503, Message: "m"})
		if got := errors.Is(err, vfs.ErrSlowDown); got != tc.slow {
			t.Errorf("%s: errors.Is(%v, vfs.ErrSlowDown) = %v, want %v", tc.code, err, got, tc.slow)
		}
		if !errors.As(err, new(minio.ErrorResponse)) {
			t.Errorf("%s: %v no longer wraps the store's answer", tc.code, err)
		}
	}
}
