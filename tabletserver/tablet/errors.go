package tablet

import (
	"errors"

	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/manifest"
)

var (
	// ErrUnknownFamily marks a request naming a family the table does not
	// have; errors wrap it with the family's name. The RPC layer maps it to
	// NOT_FOUND.
	ErrUnknownFamily = errors.New("tablet: unknown family")
	// ErrOutOfRange marks a row outside the tablet's range [Start, End). The
	// RPC layer maps it to "not serving this tablet".
	ErrOutOfRange = errors.New("tablet: row out of range")
	// ErrClosed is returned by calls on a closed (or split) tablet.
	ErrClosed = errors.New("tablet: closed")
	// ErrResourceExhausted is returned when memtable memory is past the hard
	// limit; the RPC layer maps it to RESOURCE_EXHAUSTED.
	ErrResourceExhausted = errors.New("tablet: resource exhausted")
	// ErrNoSplitKey is returned by SplitKey when the tablet cannot be split
	// (empty, or a single row).
	ErrNoSplitKey = errors.New("tablet: no split key")
	// ErrCorrupt marks damaged data found by the engine itself (a commit log
	// record that does not decode, a manifest naming a bad file). It wraps
	// corruption.ErrCorrupt.
	ErrCorrupt = corruption.New("tablet: corrupt")
	// ErrGuardRefused is wrapped, together with the guard's own error, by
	// every error of an operation that Options.Guard refused (see guard.go).
	ErrGuardRefused = errors.New("tablet: refused by the write guard")
	// ErrFailed marks calls refused because the tablet's commit log or
	// manifest failed earlier: nothing of the call was applied, and the
	// tablet is leaving service (Options.OnFailure).
	ErrFailed = errors.New("tablet: failed earlier; it takes no more writes")
	// ErrLogFailed marks a write whose commit-log write or sync failed:
	// it may or may not be in the log the next owner replays.
	ErrLogFailed = errors.New("tablet: commit log write failed; the write may or may not have been applied")
	// ErrNoTablet means the tablet's folder holds no manifest and Open was
	// not asked to create one: its files are gone (deleted, or the storage
	// root is not the one the tablet was written to). It is
	// manifest.ErrNoTablet, which manifest.References returns too.
	ErrNoTablet = manifest.ErrNoTablet
	// ErrNewerOwner means the tablet's folder holds a manifest written by a
	// newer owner (a higher epoch) than the one opening it.
	ErrNewerOwner = errors.New("tablet: a newer owner has written this tablet")
)
