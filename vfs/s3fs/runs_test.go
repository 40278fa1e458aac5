package s3fs

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// readWindows reads the whole of name the way the commit log's replay
// does (256 KiB at a time) and returns the bytes and the requests it made.
func readWindows(t *testing.T, f *FS, name string) ([]byte, Requests) {
	t.Helper()
	before := f.Requests()
	r, err := f.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := make([]byte, 0, r.Size())
	buf := make([]byte, 256<<10)
	for off := int64(0); off < r.Size(); {
		n, err := r.ReadAt(buf, off)
		if (err != nil && err != io.EOF) || n == 0 {
			t.Fatalf("%s: ReadAt(%d bytes at %d of %d) = %d, %v", name, len(buf), off, r.Size(), n, err)
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
	return out, f.Requests().Sub(before)
}

// TestRunsCutTheGetsOfAManyPartFile: a file synced 4,100 times (a commit
// log segment of a lightly loaded server: a part per group commit of one
// small write) reads back exactly in a handful of GETs, not one GET per
// part, and is opened in 3 LISTs, not one per thousand parts: the writer
// uploaded runs (runs.go), and the reader lists the runs and the parts
// past them (readParts). With the runs lost (runFault) the same read
// costs a GET per part, and still reads back exactly.
func TestRunsCutTheGetsOfAManyPartFile(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	const parts = 4100
	write := func(name string, parts int) []byte {
		w, err := f.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		var want []byte
		for range parts {
			chunk := make([]byte, 1+rng.Intn(300))
			rng.Read(chunk)
			want = append(want, chunk...)
			w.Write(chunk)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return want
	}
	want := write("/storage/seg.log", parts)
	got, reqs := readWindows(t, f, "/storage/seg.log")
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d; equal %v", len(got), len(want), bytes.Equal(got, want))
	}
	t.Logf("%d parts with runs: %d GETs, %d LISTs", parts, reqs.Get, reqs.List)
	// The run of parts 0..4095, read in 3 windows, and parts
	// 4096..4099; the first page of parts, the runs, the parts past them.
	if reqs.Get > 8 || reqs.List > 3 {
		t.Errorf("reading %d parts took %d GETs and %d LISTs; want at most 8 and 3 (a run of 4,096 parts)", parts, reqs.Get, reqs.List)
	}

	runFault = func(string, runName) bool { return true }
	defer func() { runFault = nil }()
	const fewer = 1100
	want = write("/storage/noruns.log", fewer)
	got, reqs = readWindows(t, f, "/storage/noruns.log")
	if !bytes.Equal(got, want) {
		t.Fatal("the file without runs reads back wrong")
	}
	t.Logf("%d parts without runs: %d GETs, %d LISTs", fewer, reqs.Get, reqs.List)
	if reqs.Get < fewer {
		t.Errorf("without runs %d GETs; want one per part (%d)", reqs.Get, fewer)
	}
}

// TestRunsModel writes files of random chunks synced at random, loses
// runs at random (a failed or never-made upload), plants runs that do
// not match the parts (a wrong size), and at random points, while the
// writer is still running (a server killed or paused: its run uploads
// may land at any time), reads the file with another FS: it must read
// exactly the bytes of every Sync that returned, never fewer, never
// others. It then truncates and removes the file and checks that no
// object of it is left. The seed is printed; TABULA_RUNS_SEED replays it.
func TestRunsModel(t *testing.T) {
	srv := startStore(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv("TABULA_RUNS_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (TABULA_RUNS_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	w8, err := Open(context.Background(), config(t, srv, "model"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := Open(context.Background(), config(t, srv, "model"))
	if err != nil {
		t.Fatal(err)
	}
	// File f loses each run with probability lossRates[f], decided by a
	// hash of the seed and the run, so that the seed replays the same
	// losses whatever the timing of the uploads.
	lossRates := []float64{0, 0.3, 0.7, 1}
	runFault = func(key string, j runName) bool {
		file, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(key, "model/f"), ".log"))
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%d-%d", seed, key, j.first, j.last)
		return float64(h.Sum64()%1000)/1000 < lossRates[file]
	}
	defer func() { runFault = nil }()
	for file := range lossRates {
		name := fmt.Sprintf("/storage/f%d.log", file)
		key := fmt.Sprintf("model/f%d.log", file)
		w, err := w8.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		var written, acked []byte
		var starts []int64 // where each part starts
		// Every other file is past a page of parts (readParts' long path).
		syncs := []int{1100 + rng.Intn(300), 200 + rng.Intn(600)}[file%2]
		for i := range syncs {
			chunk := make([]byte, rng.Intn(200))
			rng.Read(chunk)
			check := rng.Intn(150) == 0
			plant := rng.Intn(200) == 0
			starts = append(starts, int64(len(written)))
			written = append(written, chunk...)
			w.Write(chunk)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			acked = append(acked[:0], written...)
			if plant && i%256 >= 16 {
				// Runs of the right parts, one of the wrong size, one
				// that says its bytes start elsewhere, from where a
				// reader's chain of runs passes (a multiple of 256) and
				// longer than any run there: a reader must never use
				// them.
				first := i - i%256
				from, to := starts[first], int64(len(written))
				for _, r := range []runName{{first, i, from, to}, {first, i, from + 1, to + 1}} {
					bogus := bytes.Repeat([]byte{0xee}, int(to-from))
					if r.from == from {
						bogus = bogus[:len(bogus)/2]
					}
					if _, err := rd.c.PutObject(context.Background(), rd.cfg.Bucket, runKey(key, r), bytes.NewReader(bogus), int64(len(bogus)), minio.PutObjectOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				check = true
			}
			if check {
				got, _ := readWindows(t, rd, name)
				if !bytes.Equal(got, acked) {
					t.Fatalf("seed %d, file %d after %d syncs: read %d bytes, acked %d; equal prefix %v",
						seed, file, i+1, len(got), len(acked), bytes.HasPrefix(acked, got))
				}
			}
		}
		// The writer is not closed yet: its last runs may still be on
		// their way, as when a server dies.
		got, _ := readWindows(t, rd, name)
		if !bytes.Equal(got, acked) {
			t.Fatalf("seed %d, file %d at the end: read %d bytes, acked %d", seed, file, len(got), len(acked))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, _ = readWindows(t, rd, name)
		if !bytes.Equal(got, acked) {
			t.Fatalf("seed %d, file %d closed: read %d bytes, acked %d", seed, file, len(got), len(acked))
		}
		cut := rng.Intn(len(acked) + 1)
		if err := rd.Truncate(name, int64(cut)); err != nil {
			t.Fatal(err)
		}
		if got, _ := readWindows(t, rd, name); !bytes.Equal(got, acked[:cut]) {
			t.Fatalf("seed %d, file %d truncated to %d: read %d bytes, equal %v", seed, file, cut, len(got), bytes.Equal(got, acked[:cut]))
		}
		if err := rd.Remove(name); err != nil {
			t.Fatal(err)
		}
		for o := range rd.c.ListObjects(context.Background(), rd.cfg.Bucket, minio.ListObjectsOptions{Prefix: key + partSep, Recursive: true}) {
			t.Fatalf("seed %d, file %d removed: %s is left (%v)", seed, file, o.Key, o.Err)
		}
	}
}

// TestCreateDeletesLeftRuns: a run with no part of its file left (its
// upload landed after the file was removed) is deleted by the Create of
// a file of the same name, which therefore never reads it, though the
// new file's parts are where the run says its bytes are (17 parts of one
// byte; the writer's own runs cover 16 until it closes).
func TestCreateDeletesLeftRuns(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "left"))
	if err != nil {
		t.Fatal(err)
	}
	stale := bytes.Repeat([]byte("s"), 17)
	if _, err := f.c.PutObject(context.Background(), f.cfg.Bucket, runKey("left/x.log", runName{0, 16, 0, 17}), bytes.NewReader(stale), 17, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := f.Create("/storage/x.log")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 17 {
		want = append(want, byte('a'+i))
		w.Write(want[i:])
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := readWindows(t, f, "/storage/x.log"); !bytes.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := readWindows(t, f, "/storage/x.log"); !bytes.Equal(got, want) {
		t.Fatalf("with its own run: read %q, want %q", got, want)
	}
}

// TestReadPlan: the plan reads each stretch from the longest run that
// covers it exactly, and the parts where no run does.
func TestReadPlan(t *testing.T) {
	var ps []part
	var off int64
	for n := range 40 {
		ps = append(ps, part{key: partKey("k", n), num: n, last: n, off: off, size: int64(n + 1)})
		off += int64(n + 1)
	}
	run := func(a, b int, sizeDelta, fromDelta int64) part {
		r := runName{a, b, ps[a].off + fromDelta, ps[b].off + ps[b].size + fromDelta}
		return r.asPart(runKey("k", r), r.to-r.from+sizeDelta, time.Time{})
	}
	rs := []part{
		run(0, 15, 0, 0),
		run(0, 31, 0, 0),
		run(16, 31, 0, 0),
		run(32, 35, 1, 0), // a wrong size
		run(32, 36, 0, 1), // its bytes elsewhere
		run(33, 36, 0, 0),
		{key: "k~past", num: 37, last: 47, off: ps[37].off, end: ps[39].off + 100, size: ps[39].off + 100 - ps[37].off}, // past the last part
	}
	var got []string
	for _, p := range readPlan(ps, rs) {
		got = append(got, strings.TrimPrefix(p.key, "k"+partSep))
	}
	want := "r00000000-00000031-0-528 00000032 r00000033-00000036-561-703 00000037 00000038 00000039"
	if strings.Join(got, " ") != want {
		t.Fatalf("plan = %s\nwant   %s", strings.Join(got, " "), want)
	}
}

// FuzzParseRun: parseRun never panics, and accepts only what
// runName.String writes.
func FuzzParseRun(f *testing.F) {
	for _, s := range []string{"r00000000-00000015-0-4096", "r00000016-00000031-4096-8000", "00000001", "r1-2-3-4",
		"r00000002-00000001-0-1", "r-1-00000002-0-1", "r00000000-000000015-0-1", "r999999999-1000000000-5-5", "r00000000-00000015-9-8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := parseRun(s)
		if !ok {
			return
		}
		if r.first < 0 || r.first >= r.last || r.from < 0 || r.from > r.to || r.String() != s {
			t.Fatalf("parseRun(%q) = %+v", s, r)
		}
	})
}
