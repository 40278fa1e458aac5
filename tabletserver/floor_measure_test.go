//go:build unix

package tabletserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
	"github.com/tabuladb/tabula/internal/testkit/rpctest"
)

// floorCallers is how many goroutines call at once in every phase of
// TestMeasureFloor, as in the issue's measurement ("Requests near the
// floor": 16 concurrent callers).
const floorCallers = 16

// floorRows is how many rows the measured tablet holds (flushed into an
// SSTable, so that point reads go through the block cache as in a table
// that has been running a while).
const floorRows = 10000

// floorScanRows is the length of a short scan.
const floorScanRows = 10

// TestMeasureFloor is a measurement, not a check (it runs only with
// FLOOR_MEASURE=<calls per phase>): in one process, it measures the CPU
// (getrusage user + system of the whole process, divided by the calls)
// of the gRPC floor, a unary health Check against an in-process server on
// a loopback TCP listener, and with the same method Tabula's requests
// through the client library against in-process tablet servers: a point
// read, a small write on a server whose commit log does not fsync
// (sync=none), the same write on a server that fsyncs every acknowledged
// write (sync=always), and a short scan; and, for what a deadline costs
// gRPC (it sends it and times it on both sides), the floor's call with
// one. Every phase runs floorCallers callers at once; no call has a
// deadline but that one. The tablet servers run as deployed, with
// Prometheus metrics on (their gRPC interceptors and engine callbacks).
//
// FLOOR_ROUNDS (default 5) rounds of all phases alternate; each phase's
// median is reported with its ratio to the floor's median and the median
// of its rounds' ratios to their own floor. FLOOR_ONLY=deadline|read|
// write|durable|scan runs the floor and that phase only (for a CPU profile
// of one request type); FLOOR_PROFILE=<dir> writes a CPU profile of each
// phase of each round there, <phase>-<round>.prof, covering its calls
// only (not the setup). docs/BENCHMARKS.md "Requests near the gRPC floor"
// quotes it.
func TestMeasureFloor(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLOOR_MEASURE"))
	if n <= 0 {
		t.Skip("set FLOOR_MEASURE=<calls per phase> to measure")
	}
	rounds := 5
	if r, err := strconv.Atoi(os.Getenv("FLOOR_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}

	// The floor: gRPC's health service, client and server in this process.
	hs := health.NewServer()
	hc := rpctest.DialHealth(t, rpctest.Serve(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) }))

	// Tabula: two tablet servers on the test's etcd twin. The "users"
	// table's tablet [, "m") is on a server that does not fsync, its
	// tablet ["m", ) on one that fsyncs every write; the client finds
	// them through a fake master.
	e := newEnv(t)
	// A long lease: on a machine loaded enough to delay a renewal past the
	// tests' 2s, the server would fence itself and drop its tablets.
	serve := func(sync string, reg *prometheus.Registry) func(*Options) {
		return func(o *Options) { o.SyncMode, o.Metrics, o.LeaseTTL = sync, reg, time.Minute }
	}
	// durableReg's group-commit histogram says how many writes each fsync
	// of the durable server's commit log covered.
	durableReg := prometheus.NewRegistry()
	fast, durable := e.start(serve("none", prometheus.NewRegistry())), e.start(serve("always", durableReg))
	fastRec := e.assign("fast", nil, []byte("m"), fast, 1)
	durableRec := e.assign("durable", []byte("m"), nil, durable, 1)
	fastRef := e.load(e.dial(fast), fastRec)
	e.load(e.dial(durable), durableRec)
	m := fakemaster.Start(t)
	m.SetTablets(e.schema.Name,
		&tabulapb.TabletInfo{TabletId: fastRec.ID, EndKey: fastRec.End, ServerId: fast.ID(), ServerAddress: fast.Addr(), Epoch: 1, State: "assigned"},
		&tabulapb.TabletInfo{TabletId: durableRec.ID, StartKey: durableRec.Start, ServerId: durable.ID(), ServerAddress: durable.Addr(), Epoch: 1, State: "assigned"})
	c, err := client.NewClient(e.ctx, m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tbl := c.Open(e.schema.Name)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
	value := make([]byte, 100)
	for i := range floorRows {
		if err := tbl.Apply(e.ctx, key(i), client.NewMutation().Set("cf", []byte("q"), 1, value)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.dial(fast).FlushTablet(e.ctx, fastRef); err != nil {
		t.Fatal(err)
	}

	var seq atomic.Int64 // write keys, fresh in every call
	phases := []floorPhase{
		{"grpc health Check (floor)", "floor", func(ctx context.Context, _ *rand.Rand) error {
			_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}},
		{"the floor with a 1m deadline", "deadline", func(ctx context.Context, _ *rand.Rand) error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}},
		{"point read", "read", func(ctx context.Context, r *rand.Rand) error {
			row, err := tbl.ReadRow(ctx, key(r.IntN(floorRows)))
			if err == nil && len(row.Cells) != 1 {
				err = fmt.Errorf("read %q: %d cells, want 1", row.Key, len(row.Cells))
			}
			return err
		}},
		{"write, sync=none", "write", func(ctx context.Context, _ *rand.Rand) error {
			return tbl.Apply(ctx, fmt.Appendf(nil, "f%010d", seq.Add(1)), client.NewMutation().Set("cf", []byte("q"), 1, value))
		}},
		{"write, sync=always", "durable", func(ctx context.Context, _ *rand.Rand) error {
			return tbl.Apply(ctx, fmt.Appendf(nil, "z%010d", seq.Add(1)), client.NewMutation().Set("cf", []byte("q"), 1, value))
		}},
		{fmt.Sprintf("scan of %d rows", floorScanRows), "scan", func(ctx context.Context, r *rand.Rand) error {
			i := r.IntN(floorRows - floorScanRows)
			it := tbl.ReadRows(ctx, client.NewRange(key(i), key(i+floorScanRows)))
			defer it.Close()
			got := 0
			for it.Next() {
				got++
			}
			if err := it.Err(); err != nil {
				return err
			}
			if got != floorScanRows {
				return fmt.Errorf("scan from %q: %d rows, want %d", key(i), got, floorScanRows)
			}
			return nil
		}},
	}
	if only := os.Getenv("FLOOR_ONLY"); only != "" {
		phases = slices.DeleteFunc(phases, func(p floorPhase) bool {
			return p.short != "floor" && p.short != only
		})
	}
	cpu := make([][]float64, len(phases))  // µs per call, one per round
	rate := make([][]float64, len(phases)) // calls per second
	var group []float64                    // durable writes per fsync, one per round
	for round := range rounds {
		for p, ph := range phases {
			syncs0, _ := syncGroups(t, durableReg)
			stop := startProfile(t, fmt.Sprintf("%s-%d.prof", ph.short, round))
			// No deadline on the calls (e.ctx has one): a deadline costs
			// gRPC a header and a timer on each side of every call.
			us, perSec := measureCalls(t, context.Background(), n, ph.call)
			stop()
			cpu[p] = append(cpu[p], us)
			rate[p] = append(rate[p], perSec)
			if syncs, _ := syncGroups(t, durableReg); ph.short == "durable" && syncs > syncs0 {
				group = append(group, float64(n)/float64(syncs-syncs0))
			}
		}
	}
	floor := median(cpu[0])
	t.Logf("%d calls per phase, %d callers, %d rounds, GOMAXPROCS %d; medians:", n, floorCallers, rounds, runtime.GOMAXPROCS(0))
	t.Logf("%-28s %12s %10s %10s %12s", "phase", "CPU µs/call", "× floor", "paired", "calls/s")
	for p, ph := range phases {
		// paired: the median of each round's ratio to that round's floor,
		// steadier than the ratio of medians on a machine whose load
		// drifts between rounds.
		ratios := make([]float64, len(cpu[p]))
		for r := range cpu[p] {
			ratios[r] = cpu[p][r] / cpu[0][r]
		}
		t.Logf("%-28s %12.1f %10.2f %10.2f %12.0f   (CPU per round: %s)", ph.name, median(cpu[p]), median(cpu[p])/floor, median(ratios), median(rate[p]), fmtRounds(cpu[p]))
	}
	if len(group) > 0 {
		t.Logf("durable writes per commit log fsync: median %.1f (per round: %s)", median(group), fmtRounds(group))
	}
}

// syncGroups returns the fsyncs of a server's commit log and the records
// they covered so far, from its tabula_tabletserver_commit_log_sync_group_size
// histogram in reg.
func syncGroups(t *testing.T, reg *prometheus.Registry) (fsyncs uint64, records float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tabula_tabletserver_commit_log_sync_group_size" {
			for _, m := range mf.GetMetric() {
				fsyncs += m.GetHistogram().GetSampleCount()
				records += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return fsyncs, records
}

// floorPhase is one kind of call TestMeasureFloor measures; short is its
// FLOOR_ONLY name.
type floorPhase struct {
	name, short string
	call        func(ctx context.Context, r *rand.Rand) error
}

// measureCalls runs n calls of call from floorCallers goroutines and
// returns the process's CPU time (user + system) per call in µs and the
// calls per second of wall time.
func measureCalls(t *testing.T, ctx context.Context, n int, call func(context.Context, *rand.Rand) error) (cpuUS, perSec float64) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, floorCallers)
	cpu0, wall0 := processCPU(t), time.Now()
	for g := range floorCallers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for next.Add(1) <= int64(n) {
				if err := call(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	cpu, wall := processCPU(t)-cpu0, time.Since(wall0)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return float64(cpu.Microseconds()) / float64(n), float64(n) / wall.Seconds()
}

// startProfile starts a CPU profile into FLOOR_PROFILE/name, when
// FLOOR_PROFILE is set, and returns what stops it.
func startProfile(t *testing.T, name string) (stop func()) {
	dir := os.Getenv("FLOOR_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRounds(xs []float64) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += " "
		}
		out += strconv.FormatFloat(x, 'f', 1, 64)
	}
	return out
}
