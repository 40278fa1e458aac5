package sharedlog

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/wal"
)

// Dir returns the folder of the log called name under root:
// <root>/logs/<name> (storepath names the folders under the root).
func Dir(root, name string) string { return filepath.Join(storepath.Logs(root), name) }

// A record of the shared log is a wal record whose payload is
//
//	uvarint len(tablet) | tablet | uvarint epoch | the engine's payload
//
// tablet is the name the engine attached with (the server uses
// "<table>/<tablet id>"), epoch its owner's epoch: replay keeps only the
// records of the epoch whose manifest names the log, so what a fenced older
// owner appends is never replayed.

// appendTag appends the tag of tablet at epoch to dst.
func appendTag(dst []byte, tablet string, epoch uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(tablet)))
	dst = append(dst, tablet...)
	return binary.AppendUvarint(dst, epoch)
}

// parseTag splits a shared-log payload into its tablet, epoch and the
// engine's payload (aliasing p).
func parseTag(p []byte) (tablet []byte, epoch uint64, rest []byte, err error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, 0, nil, fmt.Errorf("%w: shared log record with a bad tablet name length", wal.ErrCorrupt)
	}
	tablet, p = p[k:k+int(n)], p[k+int(n):]
	epoch, k = binary.Uvarint(p)
	if k <= 0 {
		return nil, 0, nil, fmt.Errorf("%w: shared log record with a bad epoch", wal.ErrCorrupt)
	}
	return tablet, epoch, p[k:], nil
}
