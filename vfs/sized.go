package vfs

// SizedFiles is an FS that can open a file written in one piece (synced
// once and closed: an SSTable) without looking it up, when the caller
// knows its size: on an object store, Open lists the file's parts (one
// LIST) to learn where its bytes are, which a file of one part whose size
// a manifest recorded does not need (docs/BENCHMARKS.md "Store requests
// per tablet load"). The engine asserts the type and falls back to Open.
type SizedFiles interface {
	// OpenSized opens name, a file written in one piece of size bytes,
	// without checking either: a read of a missing file, or of bytes
	// past the file's first piece, fails then. A caller that cannot
	// check what it reads (an SSTable's footer and checksums can) must
	// not use it; on any failure of its first reads it opens the file
	// again with Open.
	OpenSized(name string, size int64) (Readable, error)
}
