package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
)

// The workloads of the Bigtable paper's per-server benchmark (§7), in the
// order they run: the sequential writes load the rows the others use.
var benchWorkloads = []string{"seqwrite", "randwrite", "seqread", "randread", "scan"}

// benchExtraWorkloads run only when --workloads names them: tswrite writes
// keys that grow with time, as a time series keyed by timestamp does
// (every client takes the next key of one shared counter), so that all
// writes go to the table's last tablet; with --salt N each key starts
// with one of N buckets and the writes spread over N tablets
// (docs/SCHEMA-DESIGN.md "Salting").
var benchExtraWorkloads = []string{"tswrite"}

const benchFamily = "cf"

// benchResult is one workload's measurement.
type benchResult struct {
	name     string
	ops      int64 // rows written or read
	bytes    int64 // value bytes written or read
	elapsed  time.Duration
	lat      []time.Duration // one per call (per batch for batched writes, per row for scans)
	notFound int64
	// store is the object-store requests by kind per 1,000 ops (per
	// tablet load for the "tabletload" row), with --store-metrics.
	store map[string]float64
}

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench [--rows N] [--clients N] [--batch N] [--workloads LIST] [--api tabula|bigtable|emulator]",
		Short: "Measure random/sequential writes and reads, and scans (the Bigtable paper's workloads)",
		Long: `Run the Bigtable paper's per-server workloads against a cluster (the dev
cluster by default): sequential writes, random writes, sequential reads,
random reads and scans of --rows rows with --value-size byte values, from
--clients concurrent goroutines, and print ops/s, MB/s and p50/p99 latency.
--batch N > 1 sends writes N rows per bulk call (latency is then per
batch). Scan latency is per row. The table (--table, default "bench") is
created pre-split into --tablets tablets unless it exists, the first row of
each tablet is read once (untimed) so that every run starts with its
tablets served, and the table is deleted at the end if bench created it,
unless --keep. Without --timeout there is no deadline.

--api picks the path the same workloads take; only the calls differ:
  tabula    Tabula's Go client, straight to the tablet servers (the default).
  bigtable  the official Cloud Bigtable Go client (cloud.google.com/go/bigtable)
            against the plaintext Bigtable API endpoint at --bigtable-addr,
            normally Tabula's gateway ("tabula dev" starts one on ` + defaultGateway + `):
            client -> gateway -> Tabula's Go client -> tablet servers. The table
            is created and deleted through the Bigtable table admin API;
            --master is not used.
  emulator  the same official-client code against the Bigtable emulator
            (bttest) started inside this process on loopback: in memory, not
            durable, not Tabula; a reference, not a peer. Its server's CPU is
            this process's (and in --cpuprofile); --tablets does not apply.
Writes carry explicit millisecond timestamps in every mode (the Bigtable
API's granularity), so the three write the same rows and values the same way.`,
		Args: cobra.NoArgs,
		RunE: runBench,
	}
	f := c.Flags()
	f.String("table", "bench", "table to use; created (family cf) if it does not exist")
	f.Int("rows", 10000, "number of rows (R in the paper)")
	f.Int("clients", 8, "concurrent client goroutines")
	f.Int("batch", 1, "rows per write call (>1 uses a bulk call: ApplyBulk, or MutateRows through the Bigtable API)")
	f.Int("value-size", 1000, "value size in bytes")
	f.Int("tablets", 8, "tablets to pre-split a new table into")
	f.String("workloads", strings.Join(benchWorkloads, ","), "workloads to run, comma-separated, in this order; also tswrite (keys growing with time, all into the last tablet unless --salt)")
	f.Int("salt", 0, "with tswrite: start each key with one of N buckets (a hash of its sequence number) and pre-split a new table at the buckets instead of --tablets; 0: no salt")
	f.Bool("keep", false, "keep the table at the end")
	f.Int64("seed", 0, "random seed (0: from the clock); printed for replay")
	f.String("cpuprofile", "", "write a CPU profile of the bench process (the client side; with --api emulator the emulator too) to this file")
	f.String("api", "tabula", "the client and path to measure: tabula, bigtable (official client through --bigtable-addr) or emulator (official client, in-process bttest)")
	f.String("bigtable-addr", defaultGateway, "with --api bigtable: the Bigtable API endpoint (Tabula's gateway), plaintext HOST:PORT")
	f.String("store-metrics", "", "the tablet servers' metrics endpoints (HOST:PORT or URLs, comma-separated; a dev cluster's serves all its servers), on an object store: print the store requests, by kind, per tablet load (a \"tabletload\" row: the loads of the table's creation) and per 1,000 ops of each workload, as the servers counted them")
	return c
}

func runBench(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	rows, _ := f.GetInt("rows")
	clients, _ := f.GetInt("clients")
	batch, _ := f.GetInt("batch")
	vsize, _ := f.GetInt("value-size")
	tablets, _ := f.GetInt("tablets")
	table, _ := f.GetString("table")
	keep, _ := f.GetBool("keep")
	seed, _ := f.GetInt64("seed")
	wl, _ := f.GetString("workloads")
	api, _ := f.GetString("api")
	salt, _ := f.GetInt("salt")
	if salt < 0 || salt > 100 {
		return cell.Invalidf("--salt %d is out of range; give 0 (no salt) to 100 buckets", salt)
	}
	if rows < 1 || clients < 1 || batch < 1 || vsize < 0 || tablets < 1 {
		return cell.Invalidf("--rows, --clients, --batch and --tablets must be >= 1 and --value-size >= 0")
	}
	var workloads []string
	for w := range strings.SplitSeq(wl, ",") {
		w = strings.TrimSpace(w)
		if !slices.Contains(benchWorkloads, w) && !slices.Contains(benchExtraWorkloads, w) {
			return cell.Invalidf("--workloads: %q is not one of %s", w, strings.Join(append(slices.Clone(benchWorkloads), benchExtraWorkloads...), ", "))
		}
		workloads = append(workloads, w)
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	s, store, desc, err := openBenchAPI(cmd, api)
	if err != nil {
		return err
	}
	defer s.close()
	defer store.close()
	progress := cmd.ErrOrStderr()
	fmt.Fprintf(progress, "bench: %s; table %s, %d rows, %d-byte values, %d clients, batch %d, seed %d\n", desc, table, rows, vsize, clients, batch, seed)
	// With --store-metrics, each step is bracketed by two readings of the
	// servers' store counters (nil without).
	var scrape func() (storeCounts, error)
	if urls := storeMetricsURLs(func() string { v, _ := f.GetString("store-metrics"); return v }()); len(urls) > 0 {
		scrape = func() (storeCounts, error) { return scrapeStore(s.ctx, urls) }
	}
	var loadStart storeCounts
	began := time.Now()
	if scrape != nil {
		if loadStart, err = scrape(); err != nil {
			return err
		}
	}

	var splits [][]byte
	for i := 1; i < tablets; i++ {
		splits = append(splits, benchKey(i*rows/tablets))
	}
	if salt > 0 {
		splits = splits[:0]
		for i := 1; i < salt; i++ {
			splits = append(splits, fmt.Appendf(nil, "%02d#", i))
		}
	}
	created, err := store.createTable(s.ctx, table, splits)
	if err != nil {
		return wrapf(err, "creating table %s", table)
	}
	if created && !keep {
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := store.deleteTable(ctx, table); err != nil {
				fmt.Fprintf(progress, "bench: could not delete table %s: %v\n", table, err)
			}
		}()
	}
	t := store.open(table)
	// Untimed: the first call to each tablet finds (and caches) where it
	// is served, and waits until it is.
	for _, k := range append([][]byte{benchKey(0)}, splits...) {
		if _, _, err := t.readRow(s.ctx, k); err != nil {
			return wrapf(err, "reading row %s of the new table %s", k, table)
		}
	}
	var results []benchResult
	if scrape != nil {
		loaded, err := scrape()
		if err != nil {
			return err
		}
		d := loaded.sub(loadStart)
		// The loads of the table's creation, and whatever else the
		// servers sent meanwhile (lease-independent: a store request is
		// a request).
		results = append(results, benchResult{name: "tabletload", ops: int64(d.loads), elapsed: time.Since(began), store: d.per(d.loads)})
	}
	if path, _ := f.GetString("cpuprofile"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	b := &bencher{t: t, rows: rows, clients: clients, batch: batch, vsize: vsize, seed: seed, salt: salt}
	for _, w := range workloads {
		fmt.Fprintf(progress, "bench: %s...\n", w)
		var before storeCounts
		if scrape != nil {
			if before, err = scrape(); err != nil {
				return err
			}
		}
		r, err := b.run(s.ctx, w)
		if err != nil {
			return wrapf(err, "bench %s", w)
		}
		if scrape != nil {
			after, err := scrape()
			if err != nil {
				return err
			}
			r.store = after.sub(before).per(float64(r.ops) / 1000)
		}
		results = append(results, r)
	}
	return printBench(s.out, results, batch)
}

// openBenchAPI opens the session and the API --api names, and describes
// the path it measures.
func openBenchAPI(cmd *cobra.Command, api string) (*session, benchAPI, string, error) {
	switch api {
	case "tabula":
		s, err := connectLong(cmd)
		if err != nil {
			return nil, nil, "", err
		}
		return s, tabulaBench{s.cli}, "Tabula's Go client", nil
	case "bigtable", "emulator":
		s, err := sessionLong(cmd)
		if err != nil {
			return nil, nil, "", err
		}
		addr, _ := cmd.Flags().GetString("bigtable-addr")
		var store benchAPI
		desc := "official Bigtable Go client -> " + addr
		if api == "bigtable" {
			store, err = dialBigtableBench(s.ctx, addr, nil)
		} else {
			store, addr, err = startEmulatorBench(s.ctx)
			desc = "official Bigtable Go client -> in-process emulator (in memory, not durable) at " + addr
		}
		if err != nil {
			s.close()
			return nil, nil, "", err
		}
		return s, store, desc, nil
	}
	return nil, nil, "", cell.Invalidf("--api %q is not tabula, bigtable or emulator", api)
}

// connectLong is connect for long-running commands: without an explicit
// --timeout (flag, TABULA_TIMEOUT or config) there is no deadline.
func connectLong(cmd *cobra.Command) (*session, error) {
	if err := noDefaultTimeout(cmd); err != nil {
		return nil, err
	}
	return connect(cmd)
}

// sessionLong is connectLong without a Tabula client, for commands that
// talk to something else.
func sessionLong(cmd *cobra.Command) (_ *session, err error) {
	if err := noDefaultTimeout(cmd); err != nil {
		return nil, err
	}
	v, err := settings(cmd)
	if err != nil {
		return nil, err
	}
	out, err := newPrinter(cmd.OutOrStdout(), v.GetString("output"))
	if err != nil {
		return nil, err
	}
	ctx, end := commandContext(cmd, v)
	return &session{v: v, ctx: ctx, out: out, end: end}, nil
}

// noDefaultTimeout sets --timeout to 0 (no deadline) unless the flag,
// TABULA_TIMEOUT or the config file sets it.
func noDefaultTimeout(cmd *cobra.Command) error {
	if cmd.Flags().Changed("timeout") || os.Getenv("TABULA_TIMEOUT") != "" {
		return nil
	}
	v, err := settings(cmd)
	if err != nil {
		return err
	}
	if v.InConfig("timeout") {
		return nil
	}
	return cmd.Flags().Set("timeout", "0s")
}

func benchKey(i int) []byte { return fmt.Appendf(nil, "row%010d", i) }

type bencher struct {
	t                           benchTable
	rows, clients, batch, vsize int
	seed                        int64
	salt                        int
	tsNext                      atomic.Int64 // tswrite's shared key counter
}

// tsKey is tswrite's key of sequence number n: growing with n, behind one
// of b.salt buckets when salted.
func (b *bencher) tsKey(n int64) []byte {
	if b.salt == 0 {
		return fmt.Appendf(nil, "t%012d", n)
	}
	h := fnv.New32a()
	fmt.Fprint(h, n)
	return fmt.Appendf(nil, "%02d#t%012d", h.Sum32()%uint32(b.salt), n)
}

// run runs one workload with b.clients goroutines; each client works on
// its own share of the rows (a contiguous chunk for sequential workloads).
func (b *bencher) run(ctx context.Context, name string) (benchResult, error) {
	parts := make([]benchResult, b.clients)
	errs := make([]error, b.clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range b.clients {
		lo, hi := c*b.rows/b.clients, (c+1)*b.rows/b.clients
		rng := rand.New(rand.NewPCG(uint64(b.seed), uint64(c)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[c] = b.client(ctx, name, lo, hi, rng, &parts[c])
		}()
	}
	wg.Wait()
	res := benchResult{name: name, elapsed: time.Since(start)}
	for _, p := range parts {
		res.ops += p.ops
		res.bytes += p.bytes
		res.notFound += p.notFound
		res.lat = append(res.lat, p.lat...)
	}
	return res, errors.Join(errs...)
}

func (b *bencher) client(ctx context.Context, name string, lo, hi int, rng *rand.Rand, r *benchResult) error {
	n := hi - lo
	key := func(i int) []byte {
		switch name {
		case "randwrite", "randread":
			return benchKey(rng.IntN(b.rows))
		case "tswrite":
			return b.tsKey(b.tsNext.Add(1))
		}
		return benchKey(lo + i)
	}
	switch name {
	case "seqwrite", "randwrite", "tswrite":
		val := make([]byte, b.vsize)
		for i := 0; i < n; i += b.batch {
			m := min(b.batch, n-i)
			keys := make([][]byte, m)
			vals := make([][]byte, m)
			for j := range m {
				fillRandom(rng, val)
				keys[j] = key(i + j)
				vals[j] = slices.Clone(val)
			}
			// An explicit timestamp makes the write idempotent, so the
			// client may retry it through tablet moves; milliseconds,
			// because that is all the Bigtable API takes.
			ts := time.Now().UnixMilli() * 1000
			t0 := time.Now()
			var err error
			if m == 1 {
				err = b.t.applyRow(ctx, keys[0], vals[0], ts)
			} else {
				err = b.t.applyBatch(ctx, keys, vals, ts)
			}
			if err != nil {
				return err
			}
			r.lat = append(r.lat, time.Since(t0))
			r.ops += int64(m)
			r.bytes += int64(m * b.vsize)
		}
	case "seqread", "randread":
		for i := range n {
			t0 := time.Now()
			size, found, err := b.t.readRow(ctx, key(i))
			if err != nil {
				return err
			}
			r.lat = append(r.lat, time.Since(t0))
			r.ops++
			if !found {
				r.notFound++
			}
			r.bytes += size
		}
	case "scan":
		if n == 0 {
			return nil
		}
		t0 := time.Now()
		return b.t.scan(ctx, benchKey(lo), benchKey(hi), func(size int64) {
			r.lat = append(r.lat, time.Since(t0))
			r.ops++
			r.bytes += size
			t0 = time.Now()
		})
	}
	return nil
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func printBench(out *printer, results []benchResult, batch int) error {
	header := []string{"workload", "ops", "seconds", "ops_per_sec", "mb_per_sec", "p50", "p99", "note"}
	withStore := slices.ContainsFunc(results, func(r benchResult) bool { return r.store != nil })
	if withStore {
		header = append(header, "store_requests")
	}
	var rows [][]any
	for _, r := range results {
		slices.Sort(r.lat)
		secs := r.elapsed.Seconds()
		opsPerSec, mbPerSec := float64(r.ops)/secs, float64(r.bytes)/secs/1e6
		var notes []string
		if batch > 1 && strings.HasSuffix(r.name, "write") {
			notes = append(notes, fmt.Sprintf("batched %d rows/call; latency per call", batch))
		}
		if r.name == "scan" {
			notes = append(notes, "latency per row")
		}
		if r.notFound > 0 {
			notes = append(notes, fmt.Sprintf("%d rows not found", r.notFound))
		}
		if r.name == "tabletload" {
			notes = append(notes, "tablets loaded by the servers from the table's creation until each served; store requests per load")
		} else if withStore {
			notes = append(notes, "store requests per 1,000 ops")
		}
		p50, p99 := percentile(r.lat, 0.50), percentile(r.lat, 0.99)
		var row []any
		if out.json {
			row = []any{r.name, r.ops, secs, opsPerSec, mbPerSec, p50.Microseconds(), p99.Microseconds(), strings.Join(notes, "; ")}
			if withStore {
				row = append(row, r.store)
			}
		} else {
			row = []any{r.name, r.ops, fmt.Sprintf("%.2f", secs), fmt.Sprintf("%.0f", opsPerSec),
				fmt.Sprintf("%.1f", mbPerSec), p50.Round(time.Microsecond), p99.Round(time.Microsecond), strings.Join(notes, "; ")}
			if withStore {
				row = append(row, formatRequests(r.store))
			}
		}
		rows = append(rows, row)
	}
	if out.json {
		header[5], header[6] = "p50_us", "p99_us"
	}
	return out.table(header, rows)
}

// startCPUProfile writes a CPU profile to path until the returned function
// is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, wrapf(err, "--cpuprofile")
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, wrapf(err, "--cpuprofile")
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
