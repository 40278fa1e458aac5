package s3fs

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
)

// reader reads a file's parts with ranged GETs.
type reader struct {
	f     *FS
	name  string
	parts []part
	size  int64
	pos   int64 // for Read
	// sized: opened by OpenSized, the file is part 0 alone, of size
	// bytes, and each GET checks that the object is exactly that long.
	sized bool
}

func (r *reader) Size() int64 { return r.size }

func (r *reader) Close() error { return nil }

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// maxParallelGets bounds the ranged GETs one ReadAt runs at once. A
// commit log segment is one part per group commit, so a read of a segment
// (recovery replays a dead server's log) spans hundreds of small parts:
// fetched one after the other, each costs a round trip.
var maxParallelGets = 16

// span is the piece of one part a ReadAt needs.
type span struct {
	key     string
	from, n int64 // range within the part
	dst     int64 // offset in the caller's buffer
	at      int64 // offset in the file
	err     error
}

// ReadAt reads len(p) bytes at off, from as many parts as they span,
// fetching up to maxParallelGets parts at once.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.size-off)
	var spans []span
	for done := int64(0); done < want; {
		at := off + done
		i := sort.Search(len(r.parts), func(i int) bool { return r.parts[i].off+r.parts[i].size > at })
		if i == len(r.parts) {
			break
		}
		pt := r.parts[i]
		n := min(want-done, pt.off+pt.size-at)
		spans = append(spans, span{key: pt.key, from: at - pt.off, n: n, dst: done, at: at})
		done += n
	}
	ctx, cancel := r.f.ctx()
	defer cancel()
	if len(spans) == 1 {
		spans[0].err = r.get(ctx, spans[0], p)
	} else {
		sem := make(chan struct{}, maxParallelGets)
		var wg sync.WaitGroup
		for i := range spans {
			sem <- struct{}{}
			wg.Add(1)
			go func(sp *span) {
				defer func() { <-sem; wg.Done() }()
				sp.err = r.get(ctx, *sp, p)
			}(&spans[i])
		}
		wg.Wait()
	}
	// What was read is the bytes up to the first failed span.
	done := int64(0)
	for _, sp := range spans {
		if sp.err != nil {
			return int(done), sp.err
		}
		done += sp.n
	}
	if done < int64(len(p)) {
		return int(done), io.EOF
	}
	return int(done), nil
}

// get reads sp into p.
func (r *reader) get(ctx context.Context, sp span, p []byte) error {
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(sp.from, sp.from+sp.n-1); err != nil {
		return err
	}
	obj, err := r.f.c.GetObject(ctx, r.f.cfg.Bucket, sp.key, opts)
	if err != nil {
		return fmt.Errorf("s3fs: reading %s: %w", r.name, r.f.explain(err))
	}
	defer obj.Close()
	if _, err := io.ReadFull(obj, p[sp.dst:sp.dst+sp.n]); err != nil {
		return fmt.Errorf("s3fs: reading %s at %d: %w", r.name, sp.at, r.f.explain(err))
	}
	if r.sized {
		// The answer to the GET just read (no request of its own).
		info, err := obj.Stat()
		if err != nil {
			return fmt.Errorf("s3fs: reading %s at %d: %w", r.name, sp.at, r.f.explain(err))
		}
		if total, ok := objectSize(info); !ok || total != r.size {
			return fmt.Errorf("s3fs: %s is not one object of the %d bytes it was opened with (the store answers %q): open it with Open", r.name, r.size, info.Headers.Get("Content-Range"))
		}
	}
	return nil
}

// objectSize is the whole object's size as a ranged GET's answer gives it:
// the total of its Content-Range ("bytes 0-99/1234"), or its length when
// the store answered with the whole object.
func objectSize(info minio.ObjectInfo) (int64, bool) {
	cr := info.Headers.Get("Content-Range")
	if cr == "" {
		return info.Size, info.Headers != nil
	}
	_, total, ok := strings.Cut(cr, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil
}
