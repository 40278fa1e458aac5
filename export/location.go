package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/tabuladb/tabula/vfs/backend"
	"github.com/tabuladb/tabula/vfs/s3fs"
)

// Location is where an export's files go or an import's come from: a
// local directory or an object store prefix, one plain file or object per
// name, so that other tools read them as they are.
type Location interface {
	// Create starts the new file name; it fails if name exists. The file
	// is complete when Close returns nil.
	Create(ctx context.Context, name string) (io.WriteCloser, error)
	// Open reads the file name; a missing file gives fs.ErrNotExist.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// List returns the names of the files in the location, sorted.
	List(ctx context.Context) ([]string, error)
	// String names the location for messages.
	String() string
}

// OpenLocation opens a local directory (created if missing when create
// is set) or s3://BUCKET[/PREFIX][?endpoint=...], with the credential
// sources of --storage (vfs/backend, vfs/s3fs: the AWS_* variables).
func OpenLocation(ctx context.Context, spec string, create bool) (Location, error) {
	if spec == "" {
		return nil, errors.New("export: no location given")
	}
	if backend.IsURL(spec) {
		cfg, err := s3fs.ParseURL(spec, os.Getenv)
		if err != nil {
			return nil, err
		}
		o, err := s3fs.OpenObjects(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &s3Location{o: o, spec: spec}, nil
	}
	abs, err := filepath.Abs(spec)
	if err != nil {
		return nil, err
	}
	if create {
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, err
		}
	} else if fi, err := os.Stat(abs); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", spec)
	}
	return localDir(abs), nil
}

type localDir string

func (d localDir) String() string { return string(d) }

func (d localDir) Create(_ context.Context, name string) (io.WriteCloser, error) {
	f, err := os.OpenFile(filepath.Join(string(d), name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return syncCloser{f}, nil
}

// syncCloser syncs a local file before closing it: a finished file
// survives a crash, as a manifest or state file naming it assumes.
type syncCloser struct{ *os.File }

func (s syncCloser) Close() error {
	err := s.File.Sync()
	if cerr := s.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d localDir) Open(_ context.Context, name string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(string(d), name))
}

func (d localDir) List(context.Context) ([]string, error) {
	ents, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

type s3Location struct {
	o    *s3fs.Objects
	spec string
}

func (l *s3Location) String() string { return l.spec }

func (l *s3Location) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	pr, pw := io.Pipe()
	w := &s3Writer{pw: pw, done: make(chan error, 1)}
	go func() {
		err := l.o.Put(ctx, name, pr, -1)
		pr.CloseWithError(err) // a failed upload fails the writer's next Write
		w.done <- err
	}()
	return w, nil
}

// s3Writer streams a file into an upload that Close waits for.
type s3Writer struct {
	pw   *io.PipeWriter
	done chan error
}

func (w *s3Writer) Write(p []byte) (int, error) { return w.pw.Write(p) }

func (w *s3Writer) Close() error {
	w.pw.Close()
	return <-w.done
}

func (l *s3Location) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	r, err := l.o.Get(ctx, name)
	if errors.Is(err, s3fs.ErrNoObject) {
		return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
	}
	return r, err
}

func (l *s3Location) List(ctx context.Context) ([]string, error) { return l.o.List(ctx) }
