package sharedlog

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

// TestMeasureRecoveryRSS measures the peak RSS of one server recovering
// every tablet of a dead server's 1 GiB shared log (64 tablets, 1 KiB
// records written round robin, default cache budget), with the tablets
// loaded one at a time and 16 at a time (the master's bound on loads in
// flight). It only runs with SHAREDLOG_MEASURE=1 (SHAREDLOG_MEASURE_MB
// sets the log's size); docs/BENCHMARKS.md has its numbers:
//
//	SHAREDLOG_MEASURE=1 go test ./sharedlog -run TestMeasureRecoveryRSS -v -timeout 30m
func TestMeasureRecoveryRSS(t *testing.T) {
	if os.Getenv("SHAREDLOG_MEASURE") != "1" {
		t.Skip("set SHAREDLOG_MEASURE=1 to measure")
	}
	mb := 1024
	if s := os.Getenv("SHAREDLOG_MEASURE_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	const tablets, size = 64, 1 << 10
	perTablet := mb << 20 / size / tablets
	root := t.TempDir()
	began := time.Now()
	keys := writeDeadLog(t, root, "dead", tablets, perTablet, size, 0)
	t.Logf("wrote a %d MiB log of %d tablets × %d records of %d bytes in %v", mb, tablets, perTablet, size, time.Since(began).Round(time.Millisecond))

	for _, loads := range []int{1, 16} {
		runtime.GC()
		debug.FreeOSMemory()
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			t.Fatalf("resetting the peak RSS: %v", err)
		}
		before := procStatus(t, "VmHWM")
		cfs := &bytesReadFS{FS: vfs.Default}
		r := mustOpen(t, Options{FS: cfs, Root: root, Name: fmt.Sprintf("reader-%d", loads)})
		began := time.Now()
		sem := make(chan struct{}, loads)
		var wg sync.WaitGroup
		errs := make(chan error, tablets)
		for _, k := range keys {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				errs <- checkBig(k, r, perTablet, size)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		took := time.Since(began)
		after := procStatus(t, "VmHWM")
		t.Logf("loads in flight %2d: peak RSS %4d MiB before, %4d MiB during recovery; %6d MiB read in %v",
			loads, before>>10, after>>10, cfs.read.Load()>>20, took.Round(time.Millisecond))
		r.Close()
	}
}

// procStatus returns a field of /proc/self/status in KiB.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// bytesReadFS counts the bytes read through it.
type bytesReadFS struct {
	vfs.FS
	read atomic.Int64
}

func (c *bytesReadFS) Open(name string) (vfs.Readable, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &bytesReadFile{Readable: f, c: c}, nil
}

type bytesReadFile struct {
	vfs.Readable
	c *bytesReadFS
}

func (f *bytesReadFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.Readable.ReadAt(p, off)
	f.c.read.Add(int64(n))
	return n, err
}

func (f *bytesReadFile) Read(p []byte) (int, error) {
	n, err := f.Readable.Read(p)
	f.c.read.Add(int64(n))
	return n, err
}
