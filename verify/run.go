package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// RunOptions configure a whole verify run: a local cluster, an ingest
// into it, the agitator's faults, then the check.
type RunOptions struct {
	// Dir holds the cluster and the history. The default is a new
	// temporary directory, removed after a run that found nothing unless
	// Keep is set.
	Dir string
	// Keep keeps Dir even after a clean run. The default is false.
	Keep bool
	// Table is the table to write. The default is "verify".
	Table string
	// Table shapes the table: split threshold and split keys. The default
	// is a 4 MiB threshold and split keys 4, 8, c.
	TableOptions TableOptions
	Cluster      ClusterOptions
	Ingest       IngestOptions
	Agitate      AgitateOptions
	Check        CheckOptions
	// CheckTimeout bounds the wait for the cluster after the faults and
	// the reading of the table. The default is 10m.
	CheckTimeout time.Duration
	// Out receives progress lines. The default discards them.
	Out io.Writer
}

// RunResult is what a run found.
type RunResult struct {
	Dir     string
	Seed    uint64
	Elapsed time.Duration
	Ingest  IngestStats
	Faults  *AgitateResult
	Report  *Report
	// Crashes are crash or data race reports found in the processes' logs.
	Crashes []string
	// Err is why the run could not finish (nil if it did).
	Err error
}

// OK reports whether the run finished and found nothing wrong.
func (r *RunResult) OK() bool {
	return r.Err == nil && r.Report != nil && r.Report.OK() && len(r.Crashes) == 0 &&
		(r.Faults == nil || len(r.Faults.Unexpected) == 0 && r.Faults.Fences().LateAcks == 0)
}

// Run starts a cluster, ingests while injecting faults, and checks the
// result. The error is for a run that could not be set up; what went wrong
// during the run is in the result.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	begin := time.Now()
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "[%7s] %s\n", time.Since(begin).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	}
	if o.Table == "" {
		o.Table = "verify"
	}
	if o.TableOptions.SplitThreshold == 0 {
		o.TableOptions.SplitThreshold = 4 << 20
	}
	if o.TableOptions.SplitKeys == nil {
		o.TableOptions.SplitKeys = []string{"4", "8", "c"}
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 10 * time.Minute
	}
	if o.Agitate.Seed == 0 {
		o.Agitate.Seed = uint64(time.Now().UnixNano())
	}
	if o.Ingest.Seed == 0 {
		o.Ingest.Seed = o.Agitate.Seed
	}
	if o.Agitate.Logf == nil {
		o.Agitate.Logf = logf
	}
	o.Cluster.Logf = logf
	if NeedsNamespaces(o.Agitate.Kinds) {
		o.Cluster.Namespaces = true
	}
	if err := CheckFaults(o.Agitate.Kinds, o.Cluster.ObjectStore); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "tabula-verify-")
		if err != nil {
			return nil, err
		}
		o.Dir = dir
	} else if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	o.Cluster.Dir = filepath.Join(o.Dir, "cluster")
	res := &RunResult{Dir: o.Dir, Seed: o.Agitate.Seed}
	logf("seed %d (replay the fault sequence with --seed %d); files in %s", res.Seed, res.Seed, o.Dir)

	c, err := StartCluster(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := c.Close(); err != nil {
			logf("stopping the cluster: %v", err)
		}
		if o.Keep || !res.OK() {
			logf("kept %s (cluster logs in %s)", o.Dir, filepath.Join(o.Cluster.Dir, "logs"))
		} else {
			os.RemoveAll(o.Dir)
		}
	}()
	storage := "sharing " + c.localStorage()
	if c.StorageURL() != "" {
		storage = "each with its own folder in " + filepath.Join(o.Cluster.Dir, "hosts") + ", tablets on " + c.StorageURL()
	}
	logf("cluster up: etcd %s, masters %s, %d tablet servers %s (lease %v)", c.EtcdAddr(),
		strings.Join(c.MasterAddrs(), ","), len(c.servers), storage, c.o.LeaseTTL)
	cl, err := c.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: connecting to the cluster: %w", err)
	}
	defer cl.Close()
	if _, err := EnsureTable(ctx, cl.Admin(), o.Table, o.TableOptions); err != nil {
		return nil, err
	}
	histPath := filepath.Join(o.Dir, "history.jsonl")
	tag := fmt.Sprintf("%08x", rand.New(rand.NewPCG(o.Ingest.Seed, 7)).Uint32())
	h, err := CreateHistory(histPath, tag, HistoryOptions{Table: o.Table})
	if err != nil {
		return nil, err
	}
	in := StartIngest(ctx, cl.Open(o.Table), h, o.Ingest)
	logf("ingest: %d list writers, %d counter writers, %d chain writers; history %s",
		in.Options().ListWriters, in.Options().CounterWriters, in.Options().ChainWriters, histPath)

	res.Faults, res.Err = Agitate(ctx, c, in, o.Agitate)
	in.Stop()
	var ierr error
	res.Ingest, ierr = in.Wait()
	herr := h.Close()
	res.Err = errors.Join(res.Err, ierr, herr)
	res.Elapsed = time.Since(begin)
	logf("faults done: %d; ingest: list %v; incr %v; cas %v", len(res.Faults.Events), res.Ingest.List, res.Ingest.Incr, res.Ingest.CAS)
	if ctx.Err() != nil {
		return res, nil
	}

	cctx, cancel := context.WithTimeout(ctx, o.CheckTimeout)
	defer cancel()
	if err := c.EnsureRunning(cctx); err != nil {
		res.Err = errors.Join(res.Err, err)
		return res, nil
	}
	if err := c.WaitServers(cctx); err != nil {
		res.Err = errors.Join(res.Err, err)
		return res, nil
	}
	logf("checking the table against the history...")
	res.Report, err = Check(cctx, cl.Open(o.Table), histPath, o.Check)
	if err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.Crashes = c.Crashes()
	res.Elapsed = time.Since(begin)
	return res, nil
}

// WriteTo prints the run's final report.
func (r *RunResult) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "==== tabula verify: seed %d, %v\n", r.Seed, r.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "writes (acked / failed / unknown): list %v; increments %v; check-and-mutate %v (%d did not match)\n",
		r.Ingest.List, r.Ingest.Incr, r.Ingest.CAS, r.Ingest.NoMatch)
	if r.Faults != nil {
		fmt.Fprintf(&b, "faults: %d\n", len(r.Faults.Events))
		fmt.Fprintf(&b, "  %-15s %5s  %-21s  %-21s  %-22s  %-21s  %s\n", "kind", "count", "first ack p50 / max", "all writers p50 / max",
			"after repair p50 / max", "longest stall p50/max", "unrecovered")
		sum := r.Faults.Summary()
		kinds := make([]string, 0, len(sum))
		for k := range sum {
			kinds = append(kinds, string(k))
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			s := sum[FaultKind(k)]
			fmt.Fprintf(&b, "  %-15s %5d  %-21s  %-21s  %-22s  %-21s  %d\n", k, s.Count,
				fmtRecovery(s.FirstAckP50)+" / "+fmtRecovery(s.FirstAckMax),
				fmtRecovery(s.AllWritersP50)+" / "+fmtRecovery(s.AllWritersMax),
				fmtRecovery(s.HealedP50)+" / "+fmtRecovery(s.HealedMax),
				fmtRecovery(s.StallP50)+" / "+fmtRecovery(s.StallMax), s.Unrecovered)
		}
		if w := sum[FaultServerKill].Wiped; w > 0 {
			fmt.Fprintf(&b, "  (%d of the %d server kills deleted the server's --data folder before its restart, as a lost host)\n",
				w, sum[FaultServerKill].Count)
		}
		if f := r.Faults.Fences(); f.Checks > 0 {
			fmt.Fprintf(&b, "  fence probes (%s): %d, %d conclusive (lease seen gone, probed after), %d probes after the lease was gone, %d acknowledged\n",
				FaultServerEtcdCut, f.Checks, f.Conclusive, f.After, f.LateAcks)
		}
		for i, e := range r.Faults.Events {
			if e.Fence != nil && e.Fence.LateAcks > 0 {
				fmt.Fprintf(&b, "fence violation: fault %d (%s of %s at %s): %s\n", i+1, e.Kind, e.Target,
					e.Began.UTC().Format("15:04:05.000"), e.Fence)
			}
		}
		for _, u := range r.Faults.Unexpected {
			fmt.Fprintf(&b, "unexpected exit: %s\n", u)
		}
		if r.Faults.Stopped != "" {
			fmt.Fprintf(&b, "agitator stopped early: %s\n", r.Faults.Stopped)
		}
	}
	for _, c := range r.Crashes {
		fmt.Fprintf(&b, "crash: %s\n", c)
	}
	if r.Report != nil {
		r.Report.WriteTo(&b)
	}
	if r.Err != nil {
		fmt.Fprintf(&b, "error: %v\n", r.Err)
	}
	if r.OK() {
		b.WriteString("result: OK\n")
	} else {
		b.WriteString("result: FAILED\n")
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
