package tablet

import "time"

// FamilyStats describes one family's SSTables.
type FamilyStats struct {
	Bytes    uint64 // SSTable file bytes (whole files, also for split references)
	SSTables int
	// SortedRuns counts the groups of files with disjoint rows (runs.go)
	// that the compaction trigger counts: 1 for files flushed in key order.
	SortedRuns int
	Cells      uint64 // cells in the SSTables, before deletes and GC
	Tombstones uint64
}

// Stats describes a tablet.
type Stats struct {
	Families      map[string]FamilyStats
	MemtableBytes int64 // active and flushing memtables
	LogBytes      int64 // live commit log segments
	// CompactionBacklog is the number of sorted runs over the L0 trigger,
	// summed over families, plus every split reference still to rewrite.
	CompactionBacklog int
	LastSeq           uint64 // highest visible sequence number
	SizeBytes         uint64 // SSTable bytes plus memtable bytes
	// Memory says where the tablet's memory goes (memstats.go).
	Memory MemoryStats
	// WriteStalls counts the writes that waited for room in the tablet's
	// full memtable since it was opened, and WriteStallTime is the time
	// they waited in all (stall.go).
	WriteStalls    uint64
	WriteStallTime time.Duration
}

// Stats returns the tablet's current numbers.
func (t *Tablet) Stats() Stats {
	s := Stats{Families: map[string]FamilyStats{}, LastSeq: t.visibleSeq.Load(),
		WriteStalls: t.stalls.Load(), WriteStallTime: time.Duration(t.stallNanos.Load())}
	s.Memory.Memtable, s.Memory.MemtableFlushing, s.Memory.MemtableArena = t.memtableBytes()
	s.MemtableBytes = s.Memory.Memtable
	s.Memory.Writing = t.writing.bytes()
	cs := t.opts.Cache.Stats()
	s.Memory.BlockCache, s.Memory.BlockCacheCapacity = cs.Bytes, cs.Capacity
	if !t.closed.Load() {
		s.LogBytes = t.log.Size()
	}
	v, err := t.currentVersion()
	if err == nil {
		defer v.unref()
		for _, name := range t.schema.Load().names {
			var fs FamilyStats
			refs := 0
			for _, f := range v.files[name] {
				fs.Bytes += f.ref.Size
				fs.SSTables++
				fs.Cells += f.ref.NumCells
				fs.Tombstones += f.ref.NumTombstones
				if f.opened() != nil {
					s.Memory.OpenFiles++
				}
				s.Memory.FileMetadata += f.metadataBytes()
				if !f.own || f.ref.Lower != nil || f.ref.Upper != nil {
					refs++
				}
			}
			fs.SortedRuns = len(v.runs[name])
			s.Families[name] = fs
			s.SizeBytes += fs.Bytes
			if over := fs.SortedRuns - t.opts.L0Trigger; over > 0 {
				s.CompactionBacklog += over
			}
			s.CompactionBacklog += refs
		}
	}
	s.SizeBytes += uint64(s.MemtableBytes)
	return s
}
