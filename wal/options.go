package wal

import (
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
)

// SyncMode says when an appended record counts as durable.
type SyncMode uint8

const (
	// SyncAlways makes Append (and Wait) return only after the record is
	// fsynced: acknowledged means durable. Concurrent writers share fsyncs.
	SyncAlways SyncMode = iota
	// SyncInterval writes records to the operating system at once and
	// fsyncs in the background every Options.SyncInterval. A machine crash
	// may lose the last interval; a process crash loses nothing.
	SyncInterval
	// SyncNone writes records to the operating system and never fsyncs
	// except on Rotate and Close.
	SyncNone
	// SyncBuffered acknowledges a record once it is in the log's memory
	// buffer, in order; a background flusher owned by the log hands the
	// buffer to the operating system continuously (the next write(2) as
	// soon as the last one returns), so one writer's records share writes.
	// It fsyncs only on Rotate, Sync and Close, as SyncNone. A process
	// crash may lose the acknowledged records still in the buffer: fewer
	// than Options.BufferSize bytes of them plus one record, because Write
	// blocks while that much is unwritten. A machine crash may lose
	// everything since the last fsync. This is pebble's NoSync promise
	// (goleveldb's Sync: false writes each batch before it acknowledges:
	// SyncNone's).
	SyncBuffered
)

// ParseSyncMode parses "always", "interval", "none" or "buffered" (any
// case). Other strings give an error wrapping cell.ErrInvalid.
func ParseSyncMode(s string) (SyncMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "always":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	case "none":
		return SyncNone, nil
	case "buffered":
		return SyncBuffered, nil
	}
	return 0, cell.Invalidf("wal: unknown sync mode %q (want always, interval, none or buffered)", s)
}

// String returns the name ParseSyncMode accepts.
func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNone:
		return "none"
	case SyncBuffered:
		return "buffered"
	}
	return "SyncMode(" + strconv.Itoa(int(m)) + ")"
}

// Options configure a Log. The zero value (with Dir set) is ready to use.
type Options struct {
	// Dir is the folder of segment files; it is created if missing.
	// Segments are named "%016d.log" by segment number. It must be set.
	Dir string
	// FS holds the segment files. The default is the local disk
	// (vfs.Default).
	FS vfs.FS
	// SyncMode says when a record counts as durable. The default is
	// SyncAlways.
	SyncMode SyncMode
	// SyncInterval is the background fsync period for SyncInterval. The
	// default is 100ms.
	SyncInterval time.Duration
	// BufferSize bounds, in SyncBuffered, the bytes of acknowledged
	// records not yet handed to the operating system: Write blocks while
	// that much is unwritten. It bounds what a process crash loses and the
	// buffer's memory. Other modes ignore it. The default is 1 MiB.
	BufferSize int
	// SegmentSize is the size past which the active segment is rotated
	// automatically. The default is 64 MiB.
	SegmentSize int64
	// RecycleSegments is how many segments RemoveBefore keeps, renamed
	// aside, for the next segments to reuse: a new segment then overwrites
	// an old file in place instead of growing a new one, which makes each
	// fsync cheaper on a local disk (no new size or extents to commit;
	// docs/CONTRACTS.md §3 "Recycling"). The kept files take disk space
	// beyond Size, up to this many segments. It applies only on an FS
	// that can overwrite files (vfs.Reuser: the local disk); elsewhere
	// removed segments are deleted. The default is 2; a negative value
	// disables recycling.
	RecycleSegments int
	// OnSync, when set, is called after every successful fsync of the
	// active segment with what that fsync covered: how group commit is
	// doing, for the owner's metrics. It runs on the syncing goroutine
	// without the log's lock held and must be cheap. The default is nil.
	OnSync func(SyncEvent)
}

// SyncEvent describes one fsync round of a log.
type SyncEvent struct {
	// Records is how many records became durable with it: the group
	// size (0 for an fsync of nothing new, e.g. on rotation).
	Records int
	// Bytes is how many bytes this round wrote before the fsync.
	Bytes int
	// Duration is the round's write plus fsync: what a waiting writer
	// waits once its round starts.
	Duration time.Duration
}

const (
	defaultSyncInterval = 100 * time.Millisecond
	defaultSegmentSize  = 64 << 20
	defaultBufferSize   = 1 << 20
	defaultRecycle      = 2
)

// withDefaults validates o and fills its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, cell.Invalidf("wal: Options.Dir is empty")
	}
	if o.SyncMode > SyncBuffered {
		return o, cell.Invalidf("wal: unknown sync mode %d", o.SyncMode)
	}
	if o.SyncInterval < 0 || o.SegmentSize < 0 || o.BufferSize < 0 {
		return o, cell.Invalidf("wal: negative SyncInterval, SegmentSize or BufferSize")
	}
	if o.BufferSize == 0 {
		o.BufferSize = defaultBufferSize
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = defaultSyncInterval
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = defaultSegmentSize
	}
	switch {
	case o.RecycleSegments == 0:
		o.RecycleSegments = defaultRecycle
	case o.RecycleSegments < 0:
		o.RecycleSegments = 0
	}
	o.FS = vfs.Or(o.FS)
	return o, nil
}
