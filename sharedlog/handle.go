package sharedlog

import (
	"errors"

	"github.com/tabuladb/tabula/wal"
)

// Handle is one tablet's attachment to a shared Log. Its calls mirror those
// of a wal.Log that the engine uses for its own log.
type Handle struct {
	l   *Log
	key pinKey
	tag []byte
}

// Write queues the tablet's record; see wal.Log.Write.
func (h *Handle) Write(payload []byte) (wal.Ticket, error) {
	t, err := h.l.cl.WriteTagged(h.tag, payload)
	if err == nil {
		h.l.checkPressure()
	}
	return t, err
}

// Wait blocks until the record of t is durable; concurrent waiters of all
// tablets share one round.
func (h *Handle) Wait(t wal.Ticket) error { return h.l.cl.Wait(t) }

// Rotate returns the active segment: every record written after the call
// is in it or a later one. The shared log is not rotated for one tablet's
// flush; replay skips the records a flush covered by their sequence number.
func (h *Handle) Rotate() (uint64, error) { return h.l.cl.Segment(), nil }

// RemoveBefore records that the tablet needs no segment below seg (its
// manifest now says so) and deletes the segments no tablet needs.
func (h *Handle) RemoveBefore(seg uint64) error { return h.l.setPin(h.key, seg, false) }

// Size returns the bytes of the whole shared log.
func (h *Handle) Size() int64 { return h.l.Size() }

// Detach ends the attachment. clean says the tablet's manifest covers every
// record it wrote (it flushed everything and wrote nothing after): its pin
// is dropped. Otherwise the pin stays, so the records remain for the
// tablet's next owner, and the log is synced whatever its sync mode: under
// sync=interval, none or buffered the tablet's last records may still be
// buffered (on an object store, not yet uploaded), and the next owner, on
// this server or another, reads only what reached the store.
func (h *Handle) Detach(clean bool) error {
	if !clean {
		if err := h.l.cl.Sync(); err != nil && !errors.Is(err, wal.ErrClosed) {
			return err
		}
		return nil
	}
	return h.l.setPin(h.key, 0, true)
}
