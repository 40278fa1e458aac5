package vfs

// WholeFiles is an FS that writes, reads and removes a small file in one
// request each: an object store, where a PUT publishes an object whole or
// not at all, so the write-a-temporary-file-then-rename dance a disk needs
// for an atomic publication is one request here instead of five (a
// temporary PUT, a COPY as the rename, the DELETE of its source and the
// LISTs that find a file's parts). The manifest uses it (docs/CONTRACTS.md
// §3 "Manifest"); callers find out with a type assertion and fall back to
// Create, Rename, Open and Remove. Only Local's absence of it is relied
// on: an FS that cannot do these in one request each should not
// implement it. Its methods are called concurrently (a load reads two
// versions at once).
type WholeFiles interface {
	// WriteWhole publishes b as the file name in one request: a reader
	// sees all of b or no file. name must be new (the caller names
	// every file once); WriteWhole does not check, so a request that
	// lands late cannot be told from one that landed in time. An error
	// is an unknown outcome unless it wraps ErrNotApplied.
	WriteWhole(name string, b []byte) error
	// ReadWhole reads a file written in one piece (by WriteWhole, or by
	// a writer synced once, or renamed into place) in one request; a
	// missing file gives an error matching fs.ErrNotExist. A file
	// written in several pieces reads as its first piece only, so
	// callers use it only for files they wrote whole and can check (a
	// manifest ends with a checksum of every byte before it).
	ReadWhole(name string) ([]byte, error)
	// RemoveWhole removes files written in one piece, in as few requests
	// as the store allows (one for up to 1,000 names on S3); missing
	// names are not an error.
	RemoveWhole(names []string) error
}
