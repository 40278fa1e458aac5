package vfs

import "errors"

// Reuser is an FS that can give an existing file a new name and overwrite
// it in place: the one exception to "a file is written once", for a
// commit log that recycles its old segments (docs/CONTRACTS.md §3
// "Recycling"). On a local disk, overwriting blocks a file already owns
// makes each fsync cheaper than appending, which must also commit the
// file's new size and extents; an object store cannot overwrite part of
// an object at all, so only Local (and Faulty over it) implement it.
// Callers find out with a type assertion and fall back to Create.
type Reuser interface {
	// Reuse renames oldname to newname and returns newname opened for
	// writing from offset 0, without truncating it: what is not
	// overwritten keeps its old bytes. Like Create it never replaces an
	// existing newname (an error matching fs.ErrExist). An error wrapping
	// ErrNotApplied left oldname as it was; one matching
	// errors.ErrUnsupported says the FS cannot reuse files here (use
	// Create).
	Reuse(oldname, newname string) (Writable, error)
}

// errReuseUnsupported is the error of a Reuse the FS cannot do.
var errReuseUnsupported = NotApplied(errors.ErrUnsupported)
