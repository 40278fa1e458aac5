package vfs

import (
	"errors"
	"io"
	"io/fs"
	"time"
)

// FS is a file system for tablet files.
type FS interface {
	// Create creates a new file for writing and fails with an error
	// matching fs.ErrExist if name exists: a file is written once.
	Create(name string) (Writable, error)
	// Open opens a file for reading.
	Open(name string) (Readable, error)
	// Truncate cuts the file to size bytes and syncs it (a torn commit
	// log tail).
	Truncate(name string, size int64) error
	// Remove removes a file or an empty directory; a missing name gives
	// an error matching fs.ErrNotExist.
	Remove(name string) error
	// RemoveAll removes a directory and everything in it; a missing name
	// is not an error.
	RemoveAll(name string) error
	// Rename atomically replaces newname by oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// List returns the entries of a directory, sorted by name.
	List(dir string) ([]Entry, error)
	// Stat describes name without following a final symbolic link.
	Stat(name string) (Info, error)
	// SyncDir makes the directory's entries (creations, renames,
	// removals) durable.
	SyncDir(dir string) error
}

// Writable is a file being written.
type Writable interface {
	io.Writer
	// Sync makes what was written durable.
	Sync() error
	io.Closer
}

// Readable is a file open for reading.
type Readable interface {
	io.Reader
	io.ReaderAt
	io.Closer
	// Size is the file's size when it was opened.
	Size() int64
}

// Entry is one directory entry.
type Entry struct {
	Name  string
	IsDir bool
}

// Info describes a file or directory.
type Info struct {
	Name    string
	Size    int64
	ModTime time.Time
	Mode    fs.FileMode
}

// IsDir reports whether the info is a directory's.
func (i Info) IsDir() bool { return i.Mode.IsDir() }

// ReadFile reads a whole file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// WriteSynced writes b to the new file name (Create: it must not exist),
// syncs it and closes it; the first error wins.
func WriteSynced(fsys FS, name string, b []byte) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Or returns fsys, or Default when it is nil: the zero value of options
// that hold an FS means the local disk.
func Or(fsys FS) FS {
	if fsys == nil {
		return Default
	}
	return fsys
}

// ErrNotApplied marks the error of a mutating call that certainly did not
// happen and never will (a rename(2) that failed: the syscall is atomic).
// Any other error of a mutating call is an unknown outcome: the call may
// have been carried out, or may still be, as when a store's answer was
// lost or came after the caller's deadline (docs/CONTRACTS.md §7). An FS
// marks an error with NotApplied only when it knows; callers test it with
// errors.Is.
var ErrNotApplied = errors.New("vfs: not applied")

// NotApplied marks err as the error of a call that did not happen; its
// message is err's. A nil err stays nil.
func NotApplied(err error) error {
	if err == nil || errors.Is(err, ErrNotApplied) {
		return err
	}
	return notApplied{err}
}

type notApplied struct{ error }

func (e notApplied) Unwrap() error        { return e.error }
func (e notApplied) Is(target error) bool { return target == ErrNotApplied }
