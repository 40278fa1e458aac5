package vfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
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
// it. What the error is says how (see Faulty): a plain error fails the
// call before it is carried out, a *ShortWrite fails a write after part of
// it, an *AfterApply fails the call after carrying it out, a *Late fails
// it at once and carries it out when the test says so.
type Injector func(op Op, name string) error

// ShortWrite, returned by an Injector for OpWrite, writes the first N
// bytes and then fails with Err (a disk that filled up mid-write).
type ShortWrite struct {
	N   int
	Err error
}

func (s *ShortWrite) Error() string {
	return fmt.Sprintf("vfs: short write of %d bytes: %v", s.N, s.Err)
}
func (s *ShortWrite) Unwrap() error { return s.Err }

// NoSpace is the error of a full disk (ENOSPC), marked as injected.
func NoSpace() error { return fmt.Errorf("%w: %w", ErrInjected, syscall.ENOSPC) }

// Failf returns an injected error with a message.
func Failf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInjected, fmt.Sprintf(format, args...))
}

// Faulty wraps an FS and fails the operations its Injector picks, in one
// of three ways a real store fails:
//
//   - before: a plain error from the Injector fails the call without
//     carrying it out, and Faulty marks the error ErrNotApplied (the
//     caller may rely on it, like a failed rename(2) on a local disk);
//   - after: an *AfterApply carries the call out on the inner FS and then
//     returns its error, as when a store's answer is lost (a CopyObject
//     that landed, then a DELETE that failed);
//   - late: a *Late returns its error at once (it wraps
//     context.DeadlineExceeded: the caller's deadline passed) and carries
//     the call out only when the test calls its Release, so a test can
//     order "the caller gives up, cleans up, then the call lands".
//
// Every mutating call can fail each way: Create, Write, Sync and Close of
// a file (on an object store, its PUT), Rename (a copy), Remove and
// RemoveAll (DELETE), Truncate, MkdirAll and SyncDir. Reads (Open, Read,
// List, Stat) change nothing, so every way fails them alike.
//
//	late := &vfs.Late{}
//	ffs.Set(func(op vfs.Op, name string) error {
//		if op == vfs.OpRename && strings.HasSuffix(name, "MANIFEST-3-v7") {
//			return late // or &vfs.AfterApply{}: renamed, then failed
//		}
//		return nil
//	})
//	err := save() // fails with context.DeadlineExceeded; nothing renamed yet
//	...           // the caller's cleanup
//	late.Release() // now the rename lands
//
// ListLag makes List eventually consistent, the third way a store can
// lie (see ListLag).
//
// Faulty is safe for concurrent use; Set may be called at any time.
type Faulty struct {
	inner  FS
	inject atomic.Pointer[Injector]

	// lagMu protects lags.
	lagMu sync.Mutex
	lags  []*listLag
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

// do runs the mutating call op on name, whose effect on the inner FS is
// apply, as the injector decides.
func (f *Faulty) do(op Op, name string, apply func() error) error {
	return f.carry(f.fault(op, name), op, name, apply)
}

// carry carries out op as err, the injector's answer, says.
func (f *Faulty) carry(err error, op Op, name string, apply func() error) error {
	if err == nil {
		return apply()
	}
	var after *AfterApply
	if errors.As(err, &after) {
		if aerr := apply(); aerr != nil {
			return aerr
		}
		return err
	}
	var late *Late
	if errors.As(err, &late) {
		late.hold(op, name, apply)
		return err
	}
	return NotApplied(err)
}

// read runs the reading call op on name: an injected error of any kind
// fails it.
func (f *Faulty) read(op Op, name string) error {
	if err := f.fault(op, name); err != nil {
		var after *AfterApply
		var late *Late
		if errors.As(err, &after) || errors.As(err, &late) {
			return err
		}
		return NotApplied(err)
	}
	return nil
}

// Create creates name unless the injector fails it. A file created
// after (or late) is left empty and closed: the caller never got it.
func (f *Faulty) Create(name string) (Writable, error) {
	var w Writable
	err := f.do(OpCreate, name, func() error {
		iw, err := f.inner.Create(name)
		if err == nil {
			f.appeared(name)
		}
		w = iw
		return err
	})
	if err != nil {
		if w != nil {
			_ = w.Close()
		}
		return nil, err
	}
	return &faultyWriter{Writable: w, f: f, name: name}, nil
}

// Open opens name unless the injector fails it.
func (f *Faulty) Open(name string) (Readable, error) {
	if err := f.read(OpOpen, name); err != nil {
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
	return f.do(OpTruncate, name, func() error { return f.inner.Truncate(name, size) })
}

// Remove removes unless the injector fails it.
func (f *Faulty) Remove(name string) error {
	return f.do(OpRemove, name, func() error {
		err := f.inner.Remove(name)
		if err == nil {
			f.vanished(name)
		}
		return err
	})
}

// RemoveAll removes unless the injector fails it (as OpRemove).
func (f *Faulty) RemoveAll(name string) error {
	return f.do(OpRemove, name, func() error { return f.inner.RemoveAll(name) })
}

// Rename renames unless the injector fails it (named by newname).
func (f *Faulty) Rename(oldname, newname string) error {
	return f.do(OpRename, newname, func() error {
		err := f.inner.Rename(oldname, newname)
		if err == nil {
			f.vanished(oldname)
			f.appeared(newname)
		}
		return err
	})
}

// MkdirAll creates unless the injector fails it.
func (f *Faulty) MkdirAll(dir string) error {
	return f.do(OpMkdir, dir, func() error {
		// The folders made, for ListLag: dir and the parents it lacked.
		var made []string
		for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
			if _, err := f.inner.Stat(d); err == nil || filepath.Dir(d) == d {
				break
			}
			made = append(made, d)
		}
		err := f.inner.MkdirAll(dir)
		if err == nil {
			for _, d := range made {
				f.appeared(d)
			}
		}
		return err
	})
}

// List lists unless the injector fails it, as eventually consistent as
// ListLag makes it.
func (f *Faulty) List(dir string) ([]Entry, error) {
	if err := f.read(OpList, dir); err != nil {
		return nil, err
	}
	entries, err := f.inner.List(dir)
	if err != nil {
		return nil, err
	}
	return f.lagged(dir, entries), nil
}

// Stat describes unless the injector fails it.
func (f *Faulty) Stat(name string) (Info, error) {
	if err := f.read(OpStat, name); err != nil {
		return Info{}, err
	}
	return f.inner.Stat(name)
}

// SyncDir syncs unless the injector fails it.
func (f *Faulty) SyncDir(dir string) error {
	return f.do(OpSyncDir, dir, func() error { return f.inner.SyncDir(dir) })
}

type faultyWriter struct {
	Writable
	f    *Faulty
	name string
	// late holds a write or sync of this file back: its Close waits
	// behind them in the same Late.
	late *Late
}

// carry is Faulty.carry for a write or sync: the file's later calls
// queue behind a late one.
func (w *faultyWriter) carry(err error, op Op, apply func() error) error {
	if w.late != nil {
		w.late.hold(op, w.name, apply)
		return w.late
	}
	err = w.f.carry(err, op, w.name, apply)
	if late := (*Late)(nil); errors.As(err, &late) {
		w.late = late
	}
	return err
}

func (w *faultyWriter) Write(p []byte) (int, error) {
	err := w.f.fault(OpWrite, w.name)
	var sw *ShortWrite
	if errors.As(err, &sw) {
		if sw.N <= 0 {
			return 0, err
		}
		n, werr := w.Writable.Write(p[:min(sw.N, len(p))])
		if werr != nil {
			return n, werr
		}
		return n, err
	}
	if err == nil && w.late == nil {
		return w.Writable.Write(p)
	}
	// Written after or late: the caller is told nothing was.
	p = append([]byte(nil), p...) // a late write outlives the caller's buffer
	err = w.carry(err, OpWrite, func() error {
		_, err := w.Writable.Write(p)
		return err
	})
	return 0, err
}

func (w *faultyWriter) Sync() error {
	if w.late != nil {
		return w.carry(nil, OpSync, w.Writable.Sync)
	}
	return w.carry(w.f.fault(OpSync, w.name), OpSync, w.Writable.Sync)
}

func (w *faultyWriter) Close() error {
	if w.late != nil {
		w.late.hold(OpClose, w.name, w.Writable.Close)
		return w.late
	}
	err := w.f.fault(OpClose, w.name)
	var late *Late
	if err != nil && errors.As(err, &late) {
		late.hold(OpClose, w.name, w.Writable.Close)
		return err
	}
	// The file is closed whatever the injector says: a plain error is a
	// close that reported a failure, and leaks nothing.
	if cerr := w.Writable.Close(); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

type faultyReader struct {
	Readable
	f    *Faulty
	name string
}

func (r *faultyReader) Read(p []byte) (int, error) {
	if err := r.f.read(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.Readable.Read(p)
}

func (r *faultyReader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.f.read(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.Readable.ReadAt(p, off)
}
