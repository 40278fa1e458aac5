package s3fs

import (
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// reader reads a file's parts with ranged GETs.
type reader struct {
	f     *FS
	name  string
	parts []part
	size  int64
	pos   int64 // for Read
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

// ReadAt reads len(p) bytes at off, from as many parts as they span.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.size-off)
	ctx, cancel := r.f.ctx()
	defer cancel()
	done := int64(0)
	for _, pt := range r.parts {
		if done == want {
			break
		}
		at := off + done
		if at < pt.off || at >= pt.off+pt.size {
			continue
		}
		n := min(want-done, pt.off+pt.size-at)
		opts := minio.GetObjectOptions{}
		if err := opts.SetRange(at-pt.off, at-pt.off+n-1); err != nil {
			return int(done), err
		}
		obj, err := r.f.c.GetObject(ctx, r.f.cfg.Bucket, pt.key, opts)
		if err != nil {
			return int(done), fmt.Errorf("s3fs: reading %s: %w", r.name, r.f.explain(err))
		}
		_, err = io.ReadFull(obj, p[done:done+n])
		obj.Close()
		if err != nil {
			return int(done), fmt.Errorf("s3fs: reading %s at %d: %w", r.name, at, r.f.explain(err))
		}
		done += n
	}
	if done < int64(len(p)) {
		return int(done), io.EOF
	}
	return int(done), nil
}
