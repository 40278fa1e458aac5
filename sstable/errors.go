package sstable

import (
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/corruption"
)

var (
	// ErrCorrupt marks every error caused by a damaged or malformed file.
	// Such errors name the file and the block (kind and offset). It wraps
	// corruption.ErrCorrupt.
	ErrCorrupt = corruption.New("sstable: corrupt")
	// ErrKeyOrder is returned by Writer.Add for a key that is not strictly
	// greater than the previous one.
	ErrKeyOrder = errors.New("sstable: keys out of order")
	// ErrTooLarge is returned by Writer.Add for an entry too large for a block.
	ErrTooLarge = errors.New("sstable: entry too large")
	// ErrClosed is returned when a closed Writer, Reader or Iter is used.
	ErrClosed = errors.New("sstable: closed")
)

// Block kinds named in corruption errors.
const (
	kindData       = "data"
	kindIndex      = "index"
	kindFilter     = "filter"
	kindProperties = "properties"
	kindFooter     = "footer"
)

// corruptf returns an ErrCorrupt error naming the file and the block.
func corruptf(path, kind string, off uint64, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s block at offset %d: %s",
		ErrCorrupt, path, kind, off, fmt.Sprintf(format, args...))
}
