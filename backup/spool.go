package backup

import (
	"context"
	"fmt"
	"os"
)

// OpenSpooled is Open with a spool folder of its own (a temporary folder
// of this process for the uploads to an object store), removed by the
// returned func once the location is no longer used.
func OpenSpooled(ctx context.Context, spec string) (*Location, func(), error) {
	spool, err := os.MkdirTemp("", "tabula-backup-spool")
	if err != nil {
		return nil, nil, err
	}
	loc, err := Open(ctx, spec, spool)
	if err != nil {
		os.RemoveAll(spool)
		return nil, nil, fmt.Errorf("backup location %s: %w", spec, err)
	}
	return loc, func() { os.RemoveAll(spool) }, nil
}
