//go:build unix

package tabletserver

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// TestMeasureWireScan is a measurement, not a check (it runs only with
// WIRESCAN_MEASURE=<rows>): one tablet server in this process holds one
// tablet of that many rows of 1000-byte values, flushed and compacted;
// WIRESCAN_ROUNDS rounds (default 5) each scan the whole tablet with the
// engine alone (the tablet's row iterator, cells reused, as the server's
// stream reads it), through the client library over gRPC on loopback,
// and through the client with client.ReuseRows (rows valid until the
// next Next, as the engine's), and report the rates, wall and CPU
// (getrusage of the process), and their ratios. WIRESCAN_PROFILE=<file>
// writes a CPU profile of the scans over the wire (and runs only those;
// WIRESCAN_REUSE=1: only those with ReuseRows). docs/BENCHMARKS.md "Scans over the wire" quotes it.
func TestMeasureWireScan(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("WIRESCAN_MEASURE"))
	if n <= 0 {
		t.Skip("set WIRESCAN_MEASURE=<rows> to measure")
	}
	rounds := 5
	if r, err := strconv.Atoi(os.Getenv("WIRESCAN_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.SyncMode = "none" })
	rec := e.assign("t1", nil, nil, srv, 1)
	ref := e.load(e.dial(srv), rec)
	m := fakemaster.Start(t)
	m.SetTablets(e.schema.Name, &tabulapb.TabletInfo{TabletId: rec.ID, ServerId: srv.ID(), ServerAddress: srv.Addr(), Epoch: 1, State: "assigned"})
	c, err := client.NewClient(e.ctx, m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tbl := c.Open(e.schema.Name)
	value := make([]byte, 1000)
	const batch = 500
	for i := 0; i < n; i += batch {
		var rows [][]byte
		var muts []*client.Mutation
		for j := i; j < min(i+batch, n); j++ {
			rows = append(rows, fmt.Appendf(nil, "k%09d", j))
			value[0], value[1] = byte(j), byte(j>>8)
			muts = append(muts, client.NewMutation().Set("cf", []byte("q"), 1, slices.Clone(value)))
		}
		if errs, err := tbl.ApplyBulk(e.ctx, rows, muts); err != nil || slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
			t.Fatal(err, errs)
		}
	}
	dc := e.dial(srv)
	if _, err := dc.FlushTablet(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: ref, Major: true}); err != nil {
		t.Fatal(err)
	}
	hs := srv.heldTablets(e.schema.Name)
	if len(hs) != 1 {
		t.Fatalf("%d tablets held, want 1", len(hs))
	}
	engine := func() int {
		it, err := hs[0].t.NewRowIterator(e.ctx, tablet.ReadOptions{ReuseCells: true})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		return countRows(t, it)
	}
	wire := func() int {
		it := tbl.ReadRows(e.ctx, client.InfiniteRange(nil))
		defer it.Close()
		return countRows(t, it)
	}
	reuse := func() int {
		it := tbl.ReadRows(e.ctx, client.InfiniteRange(nil), client.ReuseRows())
		defer it.Close()
		return countRows(t, it)
	}
	var eng, wir, reu, engCPU, wirCPU, reuCPU []float64
	phases := []struct {
		scan      func() int
		rate, cpu *[]float64
	}{{engine, &eng, &engCPU}, {wire, &wir, &wirCPU}, {reuse, &reu, &reuCPU}}
	if p := os.Getenv("WIRESCAN_PROFILE"); p != "" {
		// The profile covers the scans over the wire only, one kind.
		if os.Getenv("WIRESCAN_REUSE") != "" {
			phases, wire = phases[2:], reuse
		} else {
			phases = phases[1:2]
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		wire() // warm
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for range rounds {
		for _, ph := range phases {
			c0, t0 := processCPUTime(), time.Now()
			if got := ph.scan(); got != n {
				t.Fatalf("scan saw %d rows, want %d", got, n)
			}
			d, cpu := time.Since(t0), processCPUTime()-c0
			*ph.rate = append(*ph.rate, float64(n)/d.Seconds())
			*ph.cpu = append(*ph.cpu, float64(cpu.Nanoseconds())/float64(n))
		}
	}
	med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
	t.Logf("%d rows of 1000 B, %d rounds (medians)", n, rounds)
	for _, ph := range []struct {
		name      string
		rate, cpu []float64
	}{{"wire", wir, wirCPU}, {"reuse", reu, reuCPU}, {"engine", eng, engCPU}} {
		if len(ph.rate) > 0 {
			t.Logf("%-7s %.0f rows/s (%.0f MB/s), %.0f ns CPU/row; rounds %.0f", ph.name+":", med(ph.rate), med(ph.rate)*1000/1e6, med(ph.cpu), ph.rate)
		}
	}
	if len(eng) > 0 {
		t.Logf("wire / engine: %.2f (rows/s), CPU per row %.1fx", med(wir)/med(eng), med(wirCPU)/med(engCPU))
		t.Logf("reuse / engine: %.2f (rows/s), CPU per row %.1fx", med(reu)/med(eng), med(reuCPU)/med(engCPU))
	}
}

// countRows counts the rows an iterator gives.
func countRows(t *testing.T, it interface {
	Next() bool
	Err() error
}) int {
	got := 0
	for it.Next() {
		got++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// processCPUTime returns the user and system CPU time the process has used.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
