package tablet

// FileMetadataBytes returns the memory the tablet's open SSTables hold
// outside the block cache: each file's index, bloom filter and properties,
// kept decoded while the file is open (sstable.Reader.MetadataBytes). It
// counts the files of the current version; files that only an older
// version still open by a read or a compaction holds are not counted, nor
// are a compaction's outputs before their first read (sstable.Reader.Unload
// gave theirs back). With
// the memtables (Stats.MemtableBytes) and the server's block cache, it is
// the memory the tablet's data costs. A closed tablet holds none.
func (t *Tablet) FileMetadataBytes() int64 {
	v, err := t.currentVersion()
	if err != nil {
		return 0
	}
	defer v.unref()
	var n int64
	for _, fs := range v.files {
		for _, f := range fs {
			n += f.metadataBytes()
		}
	}
	return n
}
