package tablet

import (
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/wal"
)

// tabletLog is the commit log a tablet writes: its own wal.Log in log/, or
// its handle on the tablet server's shared log (Options.Log).
type tabletLog interface {
	Write(payload []byte) (wal.Ticket, error)
	Wait(t wal.Ticket) error
	// Rotate returns the segment the records written after it go to: the
	// replay point of a memtable swapped now.
	Rotate() (uint64, error)
	// RemoveBefore says the manifest needs no segment below seg.
	RemoveBefore(seg uint64) error
	// Size is the bytes the tablet's own log holds (0 on a shared log,
	// whose size the server reports).
	Size() int64
	// close ends the tablet's use of the log; clean says the manifest
	// covers every record the tablet wrote.
	close(clean bool) error
}

// ownLog is a tablet's private log.
type ownLog struct{ *wal.Log }

func (l ownLog) close(bool) error { return l.Close() }

// sharedHandle is a tablet's attachment to the server's shared log.
type sharedHandle struct{ *sharedlog.Handle }

func (h sharedHandle) Size() int64 { return 0 }

func (h sharedHandle) close(clean bool) error { return h.Detach(clean) }
