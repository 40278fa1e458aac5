package s3fs

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/tabuladb/tabula/corruption"
)

// TestContiguousParts: parts must be numbered 0, 1, 2, ... ; a gap, or a
// missing first part, is ErrMissingPart (a corruption) naming the object
// and the missing part, never a shorter file.
func TestContiguousParts(t *testing.T) {
	ps := func(nums ...int) []part {
		var out []part
		for _, n := range nums {
			out = append(out, part{key: partKey("p/seg.log", n), num: n})
		}
		return out
	}
	for _, tc := range []struct {
		parts   []part
		missing string // "" if whole
	}{
		{nil, ""},
		{ps(0), ""},
		{ps(0, 1, 2), ""},
		{ps(0, 2), "part 1 is missing"},
		{ps(1, 2), "part 0 is missing"},
		{ps(0, 1, 2, 5, 6), "part 3 is missing"},
	} {
		err := contiguous("p/seg.log", tc.parts)
		if tc.missing == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.parts, err)
			}
			continue
		}
		if !errors.Is(err, ErrMissingPart) || !errors.Is(err, corruption.ErrCorrupt) ||
			!strings.Contains(err.Error(), tc.missing) || !strings.Contains(err.Error(), "p/seg.log") {
			t.Errorf("%d parts: err = %v; want ErrMissingPart saying %q of p/seg.log", len(tc.parts), err, tc.missing)
		}
	}
}

// TestMissingMiddlePartIsRefused: a file whose middle part is gone from
// the store (deleted behind its back, as a lost PUT or a listing that
// lags would show it) fails Open and Stat with ErrMissingPart naming the
// part, instead of reading as a shorter file; its folder still lists it
// and Remove still removes it.
func TestMissingMiddlePartIsRefused(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "gap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.MkdirAll("/storage/log"); err != nil {
		t.Fatal(err)
	}
	const name = "/storage/log/0000000000000001.log"
	w, err := f.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"aaaa", "bbbb", "cccc"} {
		w.Write([]byte(b))
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	key := "gap/log/0000000000000001.log"
	if err := f.c.RemoveObject(context.Background(), f.cfg.Bucket, partKey(key, 1), minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Open(name); !errors.Is(err, ErrMissingPart) || !errors.Is(err, corruption.ErrCorrupt) || !strings.Contains(err.Error(), "part 1 is missing") {
		if err == nil {
			t.Fatalf("Open read a file with a missing middle part as %d bytes; want ErrMissingPart", r.Size())
		}
		t.Fatalf("Open: %v; want ErrMissingPart naming part 1", err)
	}
	if info, err := f.Stat(name); !errors.Is(err, ErrMissingPart) {
		t.Fatalf("Stat = %+v, %v; want ErrMissingPart", info, err)
	}
	if _, err := f.Create(name); err == nil {
		t.Fatal("Create over a damaged file succeeded")
	}
	entries, err := f.List("/storage/log")
	if err != nil || len(entries) != 1 || entries[0].Name != "0000000000000001.log" {
		t.Fatalf("List = %+v, %v; want the damaged file listed", entries, err)
	}
	if err := f.Remove(name); err != nil {
		t.Fatalf("Remove of a damaged file: %v", err)
	}
	if _, err := f.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Remove, Stat: %v; want not exist", err)
	}
}
