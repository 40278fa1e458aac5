// Package corruption owns the one marker that every Tabula error caused by
// damaged stored data wraps: a bad SSTable block, commit log record,
// MANIFEST, etcd record or encoded key.
//
// Each package keeps its own sentinel (sstable.ErrCorrupt,
// wal.ErrCorrupt, manifest.ErrCorrupt, tablet.ErrCorrupt,
// meta.ErrCorrupt, cell.ErrCorruptKey) for callers that care where the
// damage is. Each of them is made with New and so wraps ErrCorrupt, and one
// check finds them all, however deeply they are wrapped:
//
//	if errors.Is(err, corruption.ErrCorrupt) {
//		// Retrying reads the same bytes: report it (the message names
//		// the file and where in it), do not retry.
//	}
//
// A package declares its sentinel once:
//
//	var ErrCorrupt = corruption.New("sstable: corrupt")
//
// and wraps it, with the file and offset, wherever it finds damage:
//
//	return fmt.Errorf("%w: %s: data block at offset %d: bad checksum", ErrCorrupt, path, off)
package corruption
