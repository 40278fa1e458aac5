// Package sstable owns Tabula's immutable sorted-table file format: the
// Writer that builds a file from sorted key/value pairs, the Reader and Iter
// that read it back, the bloom filter and properties stored beside the data,
// and the Cache of decompressed data blocks shared by every open Reader.
//
// Keys are opaque byte strings ordered by bytes.Compare; in Tabula they are
// cell.AppendKey encodings of one column family's entries, which lets the
// writer fill the properties (cell and tombstone counts, timestamp and
// sequence ranges) and the bloom filter (row or row+column prefixes).
// Values are arbitrary bytes (a single value may be 64 MiB).
//
// Writing and reading a table:
//
//	f, _ := vfs.Default.Create(path) // or another vfs.FS
//	w := sstable.NewWriter(f, sstable.WriterOptions{
//		Compression: families.CompressionSnappy,
//		Bloom:       families.BloomRow,
//	})
//	for _, kv := range sorted {
//		if err := w.Add(kv.Key, kv.Value); err != nil { ... }
//	}
//	if err := w.Close(); err != nil { ... }
//
//	cache := sstable.NewCache(256 << 20)
//	r, err := sstable.Open(path, sstable.ReaderOptions{Cache: cache}) // FS: the same vfs.FS
//	it := r.NewIter(lower, upper)
//	for ok := it.First(); ok; ok = it.Next() {
//		use(it.Key(), it.Value())
//	}
//	if err := it.Err(); err != nil { ... }
//	it.Close()
//	r.Close()
//
// Every byte of a file is covered by a CRC32C checksum. Reading a damaged
// file fails with an error wrapping ErrCorrupt that names the file and the
// block (its kind and offset); the reader never panics on bad input and
// never returns data that was not written. The layout is drawn in format.go.
package sstable
