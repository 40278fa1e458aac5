package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/verify"
)

// errViolations marks a verify run or check that found violations.
var errViolations = errors.New("verification failed")

func newVerifyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "verify",
		Short: "Prove the cluster keeps its promises: ingest with recorded outcomes, inject faults, check",
		Long: `Continuous-ingest verification in the spirit of HBase's
IntegrationTestBigLinkedList and Accumulo's continuous ingest.

  tabula verify ingest --history h.jsonl --duration 10m   # against a running cluster
  tabula verify check --history h.jsonl                   # read it all back and prove it
  tabula verify run --duration 10m                        # own cluster + ingest + faults + check

"ingest" writes linked lists (each row points to an earlier row), increments
counters with read-modify-write, and moves chains one step at a time with
check-and-mutate, recording every operation's outcome (acknowledged, failed,
unknown) and timing to an append-only history. "check" proves that no
acknowledged write is lost, nothing unwritten appears, counters and chains
agree with their histories, and those histories are linearizable. "run"
starts a local cluster of real processes (etcd, 2 masters, 3 tablet servers),
ingests into it while killing, pausing and restarting them, and checks.`,
	}
	c.AddCommand(newVerifyIngestCmd(), newVerifyCheckCmd(), newVerifyRunCmd())
	return c
}

// addIngestFlags adds the flags shaping the writers.
func addIngestFlags(f *pflag.FlagSet) {
	f.String("table", "verify", "table to write (created with families l, c, s if it does not exist)")
	f.Int("writers", 8, "linked-list writers")
	f.Int("counter-writers", 4, "read-modify-write counter writers")
	f.Int("counters", 2, "counter rows per generation")
	f.Int("chain-writers", 3, "check-and-mutate chain writers")
	f.Int("chains", 1, "chain rows per generation")
	f.Duration("generation", 15*time.Second, "how long writers use one set of counter and chain rows before fresh ones")
	f.Int("value-size", 100, "payload bytes per list node")
	f.Duration("op-timeout", 30*time.Second, "bound of one operation, client retries included")
	f.String("split-threshold", "4MiB", "split threshold of a table ingest creates")
}

func ingestOptions(f *pflag.FlagSet) (verify.IngestOptions, verify.TableOptions, error) {
	var o verify.IngestOptions
	o.ListWriters, _ = f.GetInt("writers")
	o.CounterWriters, _ = f.GetInt("counter-writers")
	o.Counters, _ = f.GetInt("counters")
	o.ChainWriters, _ = f.GetInt("chain-writers")
	o.Chains, _ = f.GetInt("chains")
	o.Generation, _ = f.GetDuration("generation")
	o.ValueSize, _ = f.GetInt("value-size")
	o.OpTimeout, _ = f.GetDuration("op-timeout")
	seed, _ := f.GetUint64("seed")
	o.Seed = seed
	if o.ListWriters < 1 || o.CounterWriters < 0 || o.ChainWriters < 0 || o.Counters < 1 || o.Chains < 1 || o.ValueSize < 1 {
		return o, verify.TableOptions{}, cell.Invalidf("--writers, --counters, --chains and --value-size must be >= 1, the other writer counts >= 0")
	}
	thr, _ := f.GetString("split-threshold")
	n, err := parseSize(thr)
	if err != nil {
		return o, verify.TableOptions{}, fmt.Errorf("--split-threshold: %w", err)
	}
	return o, verify.TableOptions{SplitThreshold: n, SplitKeys: []string{"4", "8", "c"}}, nil
}

func newVerifyIngestCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ingest --history FILE [--duration D] [--writers N]",
		Short: "Write linked lists, counters and chains, recording every outcome to a history file",
		Long: `Write to --table until --duration has passed (0: until Ctrl-C) and append
every operation to --history: JSON lines, one when an operation is invoked
and one when it returns, with its outcome (ack, fail: definitely not
applied, unknown: may have been applied) and monotonic times. Running
ingest again with the same history file adds a session; "tabula verify
check" checks them all. Without --timeout there is no deadline.`,
		Args: cobra.NoArgs,
		RunE: runVerifyIngest,
	}
	f := c.Flags()
	f.String("history", "", "history file to append to (required)")
	f.Duration("duration", time.Minute, "how long to write; 0 until interrupted")
	f.Uint64("seed", 0, "random seed (0: from the clock); printed")
	addIngestFlags(f)
	return c
}

func runVerifyIngest(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	path, _ := f.GetString("history")
	if path == "" {
		return &usageError{cmd: "verify ingest", err: errors.New("--history is required")}
	}
	o, to, err := ingestOptions(f)
	if err != nil {
		return err
	}
	o.Duration, _ = f.GetDuration("duration")
	table, _ := f.GetString("table")
	s, err := connectLong(cmd)
	if err != nil {
		return err
	}
	defer s.close()
	if _, err := verify.EnsureTable(s.ctx, s.cli.Admin(), table, to); err != nil {
		return err
	}
	tag := randomTag()
	h, err := verify.CreateHistory(path, tag, verify.HistoryOptions{Table: table})
	if err != nil {
		return err
	}
	in := verify.StartIngest(s.ctx, s.cli.Open(table), h, o)
	errw := cmd.ErrOrStderr()
	fmt.Fprintf(errw, "verify ingest: table %s, session %s, seed %d, history %s\n", table, tag, in.Options().Seed, path)
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() { // owned here: stopped and waited for below
		defer close(progressDone)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				st := in.Stats()
				fmt.Fprintf(errw, "verify ingest: list %v; incr %v; cas %v\n", st.List, st.Incr, st.CAS)
			}
		}
	}()
	st, werr := in.Wait()
	close(stopProgress)
	<-progressDone
	herr := h.Close()
	fmt.Fprintf(cmd.OutOrStdout(), "ingest done: list %v; increments %v; check-and-mutate %v (%d did not match); reads %v\n",
		st.List, st.Incr, st.CAS, st.NoMatch, st.Read)
	return errors.Join(werr, herr)
}

func newVerifyCheckCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "check --history FILE [--table T]",
		Short: "Read the whole table back and prove it against the history",
		Long: `Read every row of --table (every version) and check it against --history:
every acknowledged linked-list write is present and intact; no row exists
that was never attempted; every list pointer names an attempted row; each
counter ends within [acked, acked+unknown] increments with no value twice;
each chain has no duplicate or skipped step; and the read-modify-write and
check-and-mutate histories are linearizable (porcupine). Prints a summary
and exits with status 1 on any violation. Without --timeout there is no
deadline.`,
		Args: cobra.NoArgs,
		RunE: runVerifyCheck,
	}
	f := c.Flags()
	f.String("history", "", "history file written by `tabula verify ingest` (required)")
	f.String("table", "verify", "table the history was written to")
	f.String("visualize", "", "directory for porcupine HTML views of rows that are not linearizable")
	f.Duration("linearizability-timeout", time.Minute, "bound of the linearizability check of one row (then: inconclusive)")
	return c
}

func checkOptions(f *pflag.FlagSet) verify.CheckOptions {
	var o verify.CheckOptions
	o.VisualizeDir, _ = f.GetString("visualize")
	o.LinearizabilityTimeout, _ = f.GetDuration("linearizability-timeout")
	return o
}

func runVerifyCheck(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	path, _ := f.GetString("history")
	if path == "" {
		return &usageError{cmd: "verify check", err: errors.New("--history is required")}
	}
	table, _ := f.GetString("table")
	s, err := connectLong(cmd)
	if err != nil {
		return err
	}
	defer s.close()
	rep, err := verify.Check(s.ctx, s.cli.Open(table), path, checkOptions(f))
	if err != nil {
		return err
	}
	rep.WriteTo(cmd.OutOrStdout())
	if !rep.OK() {
		return fmt.Errorf("%w: %d violations", errViolations, rep.ViolationCount())
	}
	return nil
}

func newVerifyRunCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "run [--duration 10m] [--fault-interval 5s] [--seed N] [--data-dir DIR]",
		Aliases: []string{"agitate"},
		Short:   "Start a local cluster, ingest while injecting faults, then check",
		Long: `Start a local cluster of real processes from this binary (tabula etcd, 2
masters, 3 tablet servers with --lease-ttl leases; logs under DIR/cluster/logs),
run "verify ingest" against it, and inject faults one at a time, drawn in
shuffled rounds from --faults:

  server-kill    kill -9 a tablet server, restart it after 0-2 lease TTLs
  server-stop    SIGSTOP a tablet server for 1.5-3 lease TTLs, then SIGCONT
  master-kill    kill -9 the leader master, restart it after 0-1 lease TTL
  etcd-restart   kill -9 etcd, restart it on its data after 0.25-2 lease TTLs
  store-restart  (--object-store only) kill -9 SeaweedFS, restart it on its
                 data after 0.25-2 lease TTLs; repaired once it takes writes
  store-slow     (--object-store only) the store's every answer held back
                 1-3 s, for 1.5-3 lease TTLs
  store-throttle (--object-store only) every request answered 503 SlowDown,
                 for 0.5-2 lease TTLs
  store-cut      (--object-store only) every other request's connection cut,
                 in turn before the store and in its answer, for 0.5-2 TTLs

and the network partitions, only when named in --faults (they need root,
ip, tc and nft: "make nftables"). With any of them every master and tablet
server runs in a Linux network namespace of its own, named tabv<pid>n<i>,
joined by a veth pair to a bridge tabv<pid>br holding a free /24 of
10.231.0.0/16 where etcd listens; all is removed when the run ends (and a
crashed run's leftovers at the next start). Packets are dropped by nftables
rules inside the namespace:

  server-etcd-cut  cut a tablet server off from etcd (clients still reach
                   it) for 1.5-3 lease TTLs; a probe writes straight to
                   one of its tablets throughout, and an acknowledgement
                   sent after etcd dropped its lease is a violation
  server-isolate   cut a tablet server off from everything, 1.5-3 TTLs
  master-etcd-cut  cut the leader master off from etcd, 1.5-3 TTLs
  slow-link        rate-limit a tablet server's link (tc tbf, 128 kbit/s
                   to 1 Mbit/s each way) for 1-3 TTLs
  lossy-link       drop 10-40% of a tablet server's packets each way for
                   1-3 TTLs

After each fault it measures the unavailability: the time to the next
acknowledged write of any writer, until every writer made progress again
(after the heal, for a partition), until every writer made progress after
the repair, and the longest time one writer went without progress. After
--duration (and --min-faults-per-kind of each kind) it stops,
runs "verify check", and prints the report: writes, faults per kind,
unavailability p50/max per kind, violations. The exit status is 1 on any
violation, crash or unrecovered fault. --seed replays the same choices.
The data directory is removed after a clean run unless --keep.

--secure runs the cluster with TLS on every port (a dev CA and certificates
in DIR/cluster/tls) and --auth on the masters and tablet servers; the
workload and the check connect as tabula-admin with a token bootstrapped
into etcd (kept in DIR/cluster/admin.token).

--object-store keeps the tablets on SeaweedFS started by the run (data in
DIR/cluster/seaweed; the weed binary of "make tools", or TABULA_WEED): the
masters and tablet servers take its URL as --storage, and each tablet server
has its own --data folder, DIR/cluster/hosts/<id>, as if on its own host.
The Tabula processes reach the store through a fault proxy (store-slow,
store-throttle, store-cut); the store faults join the default faults, and every other server-kill (the
first included) deletes the server's --data folder before restarting it,
as if its host were replaced.

"ingest" and "check" reach a secured cluster with the global --tls-ca and
--token, like every client command.`,
		Args: cobra.NoArgs,
		RunE: runVerifyRun,
	}
	f := c.Flags()
	f.Duration("duration", 10*time.Minute, "how long to inject faults")
	f.Duration("fault-interval", 5*time.Second, "mean pause between one fault's recovery and the next fault")
	f.Int("min-faults-per-kind", 0, "go on past --duration until this many faults of each kind were injected")
	f.String("faults", "", "fault kinds to inject, comma-separated (default: server-kill,server-stop,master-kill,etcd-restart, and store-restart,store-slow,store-throttle,store-cut with --object-store; partitions: server-etcd-cut,server-isolate,master-etcd-cut,slow-link,lossy-link)")
	f.Uint64("seed", 0, "random seed of the faults and writers (0: from the clock); printed")
	f.String("data-dir", "", "directory for the cluster and the history (default: a new temporary directory)")
	f.Bool("keep", false, "keep the data directory after a clean run")
	f.Bool("keep-going", false, "go on after a fault the cluster did not recover from, or a process that exited by itself")
	f.Duration("recovery-timeout", time.Minute, "how long every writer may take to make progress after a fault")
	f.Duration("lease-ttl", 2*time.Second, "tablet server lease TTL and master election session TTL")
	f.String("visualize", "", "directory for porcupine HTML views of rows that are not linearizable")
	f.Duration("linearizability-timeout", time.Minute, "bound of the linearizability check of one row (then: inconclusive)")
	f.Bool("secure", false, "run the cluster with TLS on every port and --auth; the workload and check connect as the bootstrapped admin")
	f.Bool("object-store", false, "keep the tablets on SeaweedFS (the weed binary of 'make tools'), each tablet server with its own --data folder")
	f.String("binary", "", "tabula binary for the cluster (default: this one)")
	f.MarkHidden("binary")
	addIngestFlags(f)
	return c
}

func runVerifyRun(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	ing, to, err := ingestOptions(f)
	if err != nil {
		return err
	}
	var o verify.RunOptions
	o.Ingest, o.TableOptions = ing, to
	o.Table, _ = f.GetString("table")
	o.Dir, _ = f.GetString("data-dir")
	o.Keep, _ = f.GetBool("keep")
	o.Agitate.Duration, _ = f.GetDuration("duration")
	o.Agitate.Interval, _ = f.GetDuration("fault-interval")
	o.Agitate.MinFaultsPerKind, _ = f.GetInt("min-faults-per-kind")
	o.Agitate.Seed, _ = f.GetUint64("seed")
	o.Agitate.KeepGoing, _ = f.GetBool("keep-going")
	o.Agitate.RecoveryTimeout, _ = f.GetDuration("recovery-timeout")
	kinds, _ := f.GetString("faults")
	for k := range strings.SplitSeq(kinds, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		fk, err := verify.ParseFaultKind(k)
		if err != nil {
			return cell.Invalidf("--faults: %v", err)
		}
		o.Agitate.Kinds = append(o.Agitate.Kinds, fk)
	}
	o.Cluster.LeaseTTL, _ = f.GetDuration("lease-ttl")
	o.Cluster.Binary, _ = f.GetString("binary")
	o.Cluster.Secure, _ = f.GetBool("secure")
	o.Cluster.ObjectStore, _ = f.GetBool("object-store")
	if err := verify.CheckFaults(o.Agitate.Kinds, o.Cluster.ObjectStore); err != nil {
		return cell.Invalidf("--faults: %v", err)
	}
	o.Check = checkOptions(f)
	o.Out = cmd.ErrOrStderr()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := verify.Run(ctx, o)
	if err != nil {
		return err
	}
	res.WriteTo(cmd.OutOrStdout())
	if ctx.Err() != nil {
		return context.Canceled
	}
	if !res.OK() {
		return errViolations
	}
	return nil
}

// randomTag names an ingest session.
func randomTag() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
