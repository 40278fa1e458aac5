package sharedlog

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/s3fs"
	"github.com/tabuladb/tabula/wal"
)

// objectStores starts SeaweedFS and returns two FSs on the same bucket
// and prefix, rooted at /store: one for the server that dies, one for the
// server that recovers its tablets, so that each one's requests are
// counted apart.
func objectStores(t *testing.T) (dead, next *s3fs.FS) {
	t.Helper()
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "tabula"})
	open := func() *s3fs.FS {
		cfg, err := s3fs.ParseURL("s3://tabula/logs?endpoint="+srv.Endpoint(), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Root, cfg.SpoolDir = "/store", t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		f, err := s3fs.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	return open(), open()
}

// TestKilledServersLogReplaysFromAnObjectStore is the failover of a
// lightly loaded server on an object store, as a model: writers of
// several tablets append to one server's shared log with sync=always
// (each write acknowledged once its group commit's PUT returned: a
// part per group commit), until the server is killed (its log is never
// closed: the runs it was uploading may land or not). Another server then
// replays every tablet through its cache: each must read back exactly
// the records acknowledged, in order. The replay must cost a small
// fraction of a GET per part (the writer's runs, vfs/s3fs/runs.go):
// without them it is one GET per part. The seed is printed;
// SHAREDLOG_SEED replays it.
func TestKilledServersLogReplaysFromAnObjectStore(t *testing.T) {
	deadFS, nextFS := objectStores(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv("SHAREDLOG_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SHAREDLOG_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	tablets := 2 + rng.Intn(4)
	perTablet := 400 + rng.Intn(400)
	segment := int64(64<<10 + rng.Intn(1<<20))
	dead, err := Open(Options{FS: deadFS, Root: "/store", Name: "dead", SyncMode: wal.SyncAlways, SegmentSize: segment})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close() // after the replay: the server was killed
	acked := make([][]string, tablets)
	var wg sync.WaitGroup
	errs := make(chan error, tablets)
	for i := range tablets {
		h := dead.Attach(fmt.Sprintf("t%d", i), 3)
		lens := make([]int, perTablet)
		for j := range lens {
			lens[j] = rng.Intn(300)
		}
		wg.Go(func() {
			for j, n := range lens {
				p := fmt.Sprintf("t%d#%d|%s", i, j, strings.Repeat("v", n))
				tk, err := h.Write([]byte(p))
				if err == nil {
					err = h.Wait(tk)
				}
				if err != nil {
					errs <- err
					return
				}
				acked[i] = append(acked[i], p)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	parts, runs := countObjects(t, deadFS, "/store/logs/dead")
	t.Logf("%d tablets × %d records, segments of %d KiB: %d parts, %d runs", tablets, perTablet, segment>>10, parts, runs)

	next, err := Open(Options{FS: nextFS, Root: "/store", Name: "next", SyncMode: wal.SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	before, began := nextFS.Requests(), time.Now()
	for i := range tablets {
		got, err := replayAll(next, "dead", pinKey{fmt.Sprintf("t%d", i), 3}, 1)
		if err != nil {
			t.Fatalf("seed %d: replay of t%d: %v", seed, i, err)
		}
		checkRecords(t, fmt.Sprintf("seed %d: tablet t%d", seed, i), got, acked[i])
	}
	took := time.Since(began)
	reqs := nextFS.Requests().Sub(before)
	t.Logf("replay of %d parts: %v, %d requests: GET %d, LIST %d", parts, took.Round(time.Millisecond), reqs.Total(), reqs.Get, reqs.List)
	if reqs.Get*8 > int64(parts) {
		t.Errorf("seed %d: the replay made %d GETs for %d parts; want at most one per 8 parts", seed, reqs.Get, parts)
	}
}

// countObjects counts the parts and the runs of the files in dir on the
// store behind fsys (a run's key has "~r" before its part numbers).
func countObjects(t *testing.T, fsys vfs.FS, dir string) (parts, runs int) {
	t.Helper()
	entries, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	s3 := fsys.(*s3fs.FS)
	for _, e := range entries {
		p, r, err := s3.Objects(dir + "/" + e.Name)
		if err != nil {
			t.Fatal(err)
		}
		parts += p
		runs += r
	}
	return parts, runs
}
