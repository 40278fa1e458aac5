package vfs

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
)

// Op names an operation Faulty can fail.
type Op string

// The operations.
const (
	OpCreate   Op = "create"
	OpWrite    Op = "write"
	OpSync     Op = "sync"
	OpClose    Op = "close"
	OpOpen     Op = "open"
	OpRead     Op = "read"
	OpTruncate Op = "truncate"
	OpRemove   Op = "remove"
	OpRename   Op = "rename"
	OpMkdir    Op = "mkdir"
	OpList     Op = "list"
	OpStat     Op = "stat"
	OpSyncDir  Op = "syncdir"
)

// ErrInjected marks every error Faulty makes up.
var ErrInjected = errors.New("vfs: injected fault")

// Injector decides one operation on name: nil lets it run; an error fails
// it (a *ShortWrite fails a write after part of it).
type Injector func(op Op, name string) error

// ShortWrite, returned by an Injector for OpWrite, writes the first N
// bytes and then fails with Err (a disk that filled up mid-write).
type ShortWrite struct {
	N   int
	Err error
}

func (s *ShortWrite) Error() string { return fmt.Sprintf("short write of %d bytes: %v", s.N, s.Err) }
func (s *ShortWrite) Unwrap() error { return s.Err }

// NoSpace is the error of a full disk (ENOSPC), marked as injected.
func NoSpace() error { return fmt.Errorf("%w: %w", ErrInjected, syscall.ENOSPC) }

// Failf returns an injected error with a message.
func Failf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInjected, fmt.Sprintf(format, args...))
}

// Faulty wraps an FS and fails the operations its Injector picks. It is
// safe for concurrent use; Set may be called at any time.
type Faulty struct {
	inner  FS
	inject atomic.Pointer[Injector]
}

// NewFaulty returns a Faulty over inner that fails nothing yet.
func NewFaulty(inner FS) *Faulty { return &Faulty{inner: Or(inner)} }

// Set installs in (nil: fail nothing).
func (f *Faulty) Set(in Injector) {
	if in == nil {
		f.inject.Store(nil)
		return
	}
	f.inject.Store(&in)
}

func (f *Faulty) fault(op Op, name string) error {
	if in := f.inject.Load(); in != nil {
		return (*in)(op, name)
	}
	return nil
}

// Create creates name unless the injector fails it.
func (f *Faulty) Create(name string) (Writable, error) {
	if err := f.fault(OpCreate, name); err != nil {
		return nil, err
	}
	w, err := f.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultyWriter{Writable: w, f: f, name: name}, nil
}

// Open opens name unless the injector fails it.
func (f *Faulty) Open(name string) (Readable, error) {
	if err := f.fault(OpOpen, name); err != nil {
		return nil, err
	}
	r, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultyReader{Readable: r, f: f, name: name}, nil
}

// Truncate truncates unless the injector fails it.
func (f *Faulty) Truncate(name string, size int64) error {
	if err := f.fault(OpTruncate, name); err != nil {
		return err
	}
	return f.inner.Truncate(name, size)
}

// Remove removes unless the injector fails it.
func (f *Faulty) Remove(name string) error {
	if err := f.fault(OpRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

// RemoveAll removes unless the injector fails it (as OpRemove).
func (f *Faulty) RemoveAll(name string) error {
	if err := f.fault(OpRemove, name); err != nil {
		return err
	}
	return f.inner.RemoveAll(name)
}

// Rename renames unless the injector fails it (named by newname).
func (f *Faulty) Rename(oldname, newname string) error {
	if err := f.fault(OpRename, newname); err != nil {
		return err
	}
	return f.inner.Rename(oldname, newname)
}

// MkdirAll creates unless the injector fails it.
func (f *Faulty) MkdirAll(dir string) error {
	if err := f.fault(OpMkdir, dir); err != nil {
		return err
	}
	return f.inner.MkdirAll(dir)
}

// List lists unless the injector fails it.
func (f *Faulty) List(dir string) ([]Entry, error) {
	if err := f.fault(OpList, dir); err != nil {
		return nil, err
	}
	return f.inner.List(dir)
}

// Stat describes unless the injector fails it.
func (f *Faulty) Stat(name string) (Info, error) {
	if err := f.fault(OpStat, name); err != nil {
		return Info{}, err
	}
	return f.inner.Stat(name)
}

// SyncDir syncs unless the injector fails it.
func (f *Faulty) SyncDir(dir string) error {
	if err := f.fault(OpSyncDir, dir); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

type faultyWriter struct {
	Writable
	f    *Faulty
	name string
}

func (w *faultyWriter) Write(p []byte) (int, error) {
	if err := w.f.fault(OpWrite, w.name); err != nil {
		var sw *ShortWrite
		if errors.As(err, &sw) && sw.N > 0 {
			n, werr := w.Writable.Write(p[:min(sw.N, len(p))])
			if werr != nil {
				return n, werr
			}
			return n, err
		}
		return 0, err
	}
	return w.Writable.Write(p)
}

func (w *faultyWriter) Sync() error {
	if err := w.f.fault(OpSync, w.name); err != nil {
		return err
	}
	return w.Writable.Sync()
}

func (w *faultyWriter) Close() error {
	err := w.f.fault(OpClose, w.name)
	return errors.Join(err, w.Writable.Close())
}

type faultyReader struct {
	Readable
	f    *Faulty
	name string
}

func (r *faultyReader) Read(p []byte) (int, error) {
	if err := r.f.fault(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.Readable.Read(p)
}

func (r *faultyReader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.f.fault(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.Readable.ReadAt(p, off)
}
