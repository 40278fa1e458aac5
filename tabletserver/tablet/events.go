package tablet

import "time"

// Events are callbacks on a tablet's background work, so that its server
// can count it (metrics) without the engine knowing how it is exported.
// Each runs on the goroutine that did the work, after the work was
// published; it must be cheap and must not block or call back into the
// tablet. Nil fields are skipped. One Events is usually shared by every
// tablet of a server, so the callbacks must be safe for concurrent use.
type Events struct {
	// Flushed is called after every successful flush.
	Flushed func(FlushEvent)
	// Compacted is called after every successful compaction of a family.
	Compacted func(CompactionEvent)
	// WriteStalled is called when a write that waited for room in a full
	// memtable goes ahead or gives up (stall.go), on the writer's
	// goroutine.
	WriteStalled func(WriteStallEvent)
}

// FlushEvent describes one flush of a memtable to SSTables.
type FlushEvent struct {
	MemtableBytes int64         // the memtable's bytes
	Files         int           // SSTables written (one per non-empty family)
	Bytes         uint64        // their bytes
	Duration      time.Duration // from the start of the flush to its publication
}

// CompactionEvent describes one compaction of one family.
type CompactionEvent struct {
	Family   string
	Major    bool // all files merged and deletions dropped, vs. the newest files merged
	Inputs   int  // SSTables merged
	BytesIn  uint64
	BytesOut uint64 // 0 when everything merged away
	Duration time.Duration
}

func (t *Tablet) flushed(e FlushEvent) {
	if ev := t.opts.Events; ev != nil && ev.Flushed != nil {
		ev.Flushed(e)
	}
}

func (t *Tablet) compacted(e CompactionEvent) {
	if ev := t.opts.Events; ev != nil && ev.Compacted != nil {
		ev.Compacted(e)
	}
}
