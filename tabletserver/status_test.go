package tabletserver

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/tabletserver/tablet/commitlog"
	"github.com/tabuladb/tabula/tabletserver/tablet/manifest"
)

// TestErrorCodes pins the mapping of DESIGN.md §5, with the errors wrapped
// the way the engine and the server wrap them.
func TestErrorCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("tablet users/t1: %w", err) }
	cases := []struct {
		err  error
		want codes.Code
	}{
		{wrap(cell.Invalidf("row key is empty")), codes.InvalidArgument},
		{wrap(tablet.ErrUnknownFamily), codes.NotFound},
		{wrap(tablet.ErrOutOfRange), codes.FailedPrecondition},
		{notServing("users", "t1", nil, "moved"), codes.FailedPrecondition},
		{wrap(ErrFenced), codes.FailedPrecondition},
		{wrap(tablet.ErrResourceExhausted), codes.ResourceExhausted},
		{wrap(ErrOutcomeUnknown), codes.Unavailable},
		{wrap(sstable.ErrCorrupt), codes.Internal},
		{wrap(commitlog.ErrCorrupt), codes.Internal},
		{wrap(manifest.ErrCorrupt), codes.Internal},
		{wrap(tablet.ErrCorrupt), codes.Internal},
		{wrap(context.Canceled), codes.Canceled},
	}
	for _, c := range cases {
		if got := codeOf(c.err); got != c.want {
			t.Errorf("codeOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
