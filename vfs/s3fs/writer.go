package s3fs

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/minio/minio-go/v7"
)

// writer spools a file being written to a local temporary file and
// uploads it a part per Sync, and runs of parts in the background
// (runs.go).
type writer struct {
	f        *FS
	name     string
	key      string
	spool    *os.File
	written  int64 // bytes written so far
	uploaded int64 // bytes already in parts
	next     int   // number of the next part
	err      error // sticky: a failed upload leaves the file unusable
	closed   bool
	// bounds[i] is where part i*runFanout starts (runs.go).
	bounds []int64
	runs   *runner // started at the first run queued
}

func newWriter(f *FS, name, key string) (*writer, error) {
	spool, err := os.CreateTemp(f.cfg.SpoolDir, "tabula-s3-*")
	if err != nil {
		return nil, fmt.Errorf("s3fs: spooling %s: %w", name, err)
	}
	// The spool has no name worth keeping: unlinked at once, it goes away
	// with the process whatever happens.
	_ = os.Remove(spool.Name())
	return &writer{f: f, name: name, key: key, spool: spool, bounds: []int64{0}}, nil
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.spool.Write(p)
	w.written += int64(n)
	if err != nil {
		w.err = fmt.Errorf("s3fs: spooling %s: %w", w.name, err)
	}
	return n, w.err
}

// Sync uploads what was written since the last Sync as one part.
func (w *writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if w.written == w.uploaded && w.next > 0 {
		return nil
	}
	ctx, cancel := w.f.ctx()
	defer cancel()
	size := w.written - w.uploaded
	body := io.NewSectionReader(w.spool, w.uploaded, size)
	if _, err := w.f.c.PutObject(ctx, w.f.cfg.Bucket, partKey(w.key, w.next), body, size, minio.PutObjectOptions{}); err != nil {
		// Whether the part landed is unknown; the engine treats a failed
		// sync as the end of this file, so nothing more is written to it.
		w.err = fmt.Errorf("s3fs: writing %s: %w", w.name, w.f.explain(err))
		return w.err
	}
	w.next++
	w.uploaded = w.written
	w.queueRuns()
	return nil
}

// Close uploads the rest, waits for the runs queued and releases the
// spool.
func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.Sync()
	if err == nil {
		w.queueClosingRun()
	}
	w.stopRuns()
	return errors.Join(err, w.spool.Close())
}
