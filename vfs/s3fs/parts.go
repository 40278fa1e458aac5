package s3fs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/tabuladb/tabula/corruption"
)

// ErrMissingPart marks a file whose listed parts are not numbered 0, 1,
// 2, ... without a gap: a part in the middle (or the first) is missing,
// because the store's listing has not caught up with a PUT yet or the
// part was lost. Reading such a file would return a shorter file that
// looks whole, so Open, Stat, Truncate and Rename refuse it; List still
// lists it, and Remove and RemoveAll still remove it. It wraps
// corruption.ErrCorrupt: readers treat it as damaged data, never as a
// shorter file.
var ErrMissingPart = corruption.New("s3fs: a part of the file is missing")

const partSep = "~"

func partKey(key string, n int) string { return fmt.Sprintf("%s%s%08d", key, partSep, n) }

// part is one object of a file: one of its parts, or a run (runs.go).
type part struct {
	key string
	num int // the part's number, from its key's suffix; a run's first part
	// last is a run's last part (the part's own number for a part).
	last     int
	off      int64
	size     int64
	modified time.Time
}

// parts lists the parts of the file key in order and checks that they
// are numbered from 0 without a gap (ErrMissingPart otherwise), and lists
// its runs (runs.go). The store contract (docs/OPERATIONS.md) is that a
// listing shows every object whose PUT returned; this is the cheap check
// that it did for this file, short of the newest parts, which nothing
// here can prove.
func (f *FS) parts(ctx context.Context, key string) (ps, rs []part, err error) {
	ps, rs, err = f.listParts(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	if err := contiguous(key, ps); err != nil {
		return nil, nil, err
	}
	return ps, rs, nil
}

// listParts lists the parts of the file key in part-number order, gaps
// and all (Remove deletes what there is), with their offsets, and its
// runs, in no particular order.
func (f *FS) listParts(ctx context.Context, key string) (ps, rs []part, err error) {
	prefix := key + partSep
	for o := range f.c.ListObjects(ctx, f.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, nil, fmt.Errorf("s3fs: listing %s: %w", key, f.explain(o.Err))
		}
		suffix := strings.TrimPrefix(o.Key, prefix)
		if first, last, ok := parseRun(suffix); ok {
			rs = append(rs, part{key: o.Key, num: first, last: last, size: o.Size, modified: o.LastModified})
			continue
		}
		n, err := strconv.Atoi(suffix)
		if err != nil || n < 0 {
			// Not a part of this file (a name with '~' is refused by key,
			// so only a foreign object can look like this).
			continue
		}
		ps = append(ps, part{key: o.Key, num: n, last: n, size: o.Size, modified: o.LastModified})
	}
	// By number, not by key: a ninth digit would sort "~100000000"
	// before "~99999999".
	slices.SortFunc(ps, func(a, b part) int { return a.num - b.num })
	var off int64
	for i := range ps {
		ps[i].off = off
		off += ps[i].size
	}
	return ps, rs, nil
}

// contiguous checks that ps (sorted) are parts 0..len(ps)-1 of key.
func contiguous(key string, ps []part) error {
	for i, p := range ps {
		if p.num != i {
			return fmt.Errorf("%w: object %s: part %d is missing (%d parts listed, the last numbered %d): the store's listing lags behind a write, or the part was lost",
				ErrMissingPart, key, i, len(ps), ps[len(ps)-1].num)
		}
	}
	return nil
}
