package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"syscall"
	"time"
)

// FaultKind names a fault the agitator injects.
type FaultKind string

// The faults.
const (
	// FaultServerKill: kill -9 a random tablet server, restart it (same ID,
	// address and storage) after 0 to 2 lease TTLs. On an object store
	// every other one (the first, third, ...) deletes the server's own
	// --data folder before the restart, as if its host were replaced.
	FaultServerKill FaultKind = "server-kill"
	// FaultServerStop: SIGSTOP a random tablet server for 1.5 to 3 lease
	// TTLs (past its lease: its tablets move), then SIGCONT.
	FaultServerStop FaultKind = "server-stop"
	// FaultMasterKill: kill -9 the leader master, restart it after 0 to 1
	// lease TTL.
	FaultMasterKill FaultKind = "master-kill"
	// FaultEtcdRestart: kill -9 etcd, restart it on the same data after
	// 0.25 to 2 lease TTLs.
	FaultEtcdRestart FaultKind = "etcd-restart"
	// FaultStoreRestart: kill -9 the object store (ObjectStore clusters
	// only), restart it on the same data after 0.25 to 2 lease TTLs; the
	// Tabula processes keep running through it.
	FaultStoreRestart FaultKind = "store-restart"
)

// AllFaults lists every fault kind.
var AllFaults = []FaultKind{FaultServerKill, FaultServerStop, FaultMasterKill, FaultEtcdRestart, FaultStoreRestart,
	FaultStoreSlow, FaultStoreThrottle, FaultStoreCut}

// DefaultFaults returns the fault kinds that apply to a cluster: all of
// them with an object store, else all but the store's (storefaults.go).
func DefaultFaults(objectStore bool) []FaultKind {
	if objectStore {
		return AllFaults
	}
	return slices.DeleteFunc(slices.Clone(AllFaults), needsObjectStore)
}

// CheckFaults fails if a fault kind does not apply to a cluster.
func CheckFaults(kinds []FaultKind, objectStore bool) error {
	for _, k := range kinds {
		if needsObjectStore(k) && !objectStore {
			return fmt.Errorf("verify: fault %s needs a cluster on an object store (ClusterOptions.ObjectStore, --object-store)", k)
		}
	}
	if NeedsNamespaces(kinds) && objectStore {
		return fmt.Errorf("verify: the partition faults %v need a cluster on a local folder, not on an object store", PartitionFaults)
	}
	return nil
}

// ParseFaultKind checks a fault kind's name.
func ParseFaultKind(s string) (FaultKind, error) {
	k := FaultKind(s)
	if !slices.Contains(AllFaults, k) && !IsPartitionFault(k) {
		return "", fmt.Errorf("verify: unknown fault %q; the faults are %v and the partitions %v", s, AllFaults, PartitionFaults)
	}
	return k, nil
}

// AgitateOptions configure the agitator.
type AgitateOptions struct {
	// Duration is how long to inject faults, at least. The default is 10m.
	Duration time.Duration
	// MinFaultsPerKind makes the agitator go on past Duration until it
	// has injected this many faults of each kind. The default is 0.
	MinFaultsPerKind int
	// Interval is the mean pause between the recovery from one fault and
	// the next fault (each pause is drawn from [0.5, 1.5] × Interval). The
	// default is 5s.
	Interval time.Duration
	// Kinds are the faults to inject, drawn in shuffled rounds so that
	// each kind comes equally often. The default is the cluster's
	// DefaultFaults.
	Kinds []FaultKind
	// Seed seeds every choice. The default (0) is the clock.
	Seed uint64
	// RecoveryTimeout bounds the wait, after a fault is repaired, for
	// every writer to make progress again. The default is 60s.
	RecoveryTimeout time.Duration
	// KeepGoing goes on after a fault the cluster did not recover from in
	// time, or a process that exited by itself (it is restarted); without
	// it, the agitator stops there. The default is false.
	KeepGoing bool
	// Logf reports each fault. The default discards it.
	Logf func(format string, args ...any)
}

func (o AgitateOptions) withDefaults(objectStore bool) AgitateOptions {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if len(o.Kinds) == 0 {
		o.Kinds = DefaultFaults(objectStore)
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if o.RecoveryTimeout <= 0 {
		o.RecoveryTimeout = 60 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// FaultEvent is one injected fault and how the cluster took it.
type FaultEvent struct {
	Kind   FaultKind
	Target string
	// At is when the fault began, since the agitator started; Began is
	// the same instant on the wall clock (to find it in the logs).
	At    time.Duration
	Began time.Time
	// Down is how long the target was dead or paused.
	Down time.Duration
	// FirstAck is the time from the fault to the next acknowledged write
	// of any writer; AllWriters to when every writer had made progress
	// again; Healed from the repair (the process back, the store taking
	// writes or behaving again, the partition healed) to when every
	// writer had made progress after it: the unavailability that is
	// Tabula's own. Negative: not within the recovery timeout.
	FirstAck, AllWriters, Healed time.Duration
	// Stall is the longest time one writer went without progress from the
	// fault's beginning until every writer had progressed (after the heal,
	// for a partition fault): the unavailability of faults whose effect
	// begins late (a server cut off from etcd serves until its lease
	// bound) or is partial (a slow link).
	Stall time.Duration
	// Wiped: the target's own --data folder was deleted before its
	// restart, as on a new host (a FaultServerKill on an object store).
	Wiped bool
	// Detail says more about a partition fault: the rate of a slow link,
	// the loss of a lossy one.
	Detail string
	// Fence is what the fence probe of a FaultServerEtcdCut saw (nil if
	// none ran).
	Fence *FenceCheck
}

// AgitateResult is what the agitator did.
type AgitateResult struct {
	Seed   uint64
	Events []FaultEvent
	// Unexpected lists processes that exited without being killed.
	Unexpected []string
	// Stopped says why the agitator stopped early ("" if it did not).
	Stopped string
}

// FaultSummary sums up the faults of one kind.
type FaultSummary struct {
	Count, Unrecovered int
	// Wiped counts the events that deleted the target's --data folder.
	Wiped int
	// FirstAck and AllWriters are the p50 and max of the events' times.
	FirstAckP50, FirstAckMax     time.Duration
	AllWritersP50, AllWritersMax time.Duration
	StallP50, StallMax           time.Duration
	// HealedP50 and HealedMax sum up the events' Healed.
	HealedP50, HealedMax time.Duration
}

// Summary sums up the events by kind.
func (r *AgitateResult) Summary() map[FaultKind]FaultSummary {
	out := map[FaultKind]FaultSummary{}
	byKind := map[FaultKind][]FaultEvent{}
	for _, e := range r.Events {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	for k, es := range byKind {
		var first, all, stall, healed []time.Duration
		s := FaultSummary{Count: len(es)}
		for _, e := range es {
			stall = append(stall, e.Stall)
			if e.Wiped {
				s.Wiped++
			}
			if e.FirstAck >= 0 {
				first = append(first, e.FirstAck)
			}
			if e.Healed >= 0 {
				healed = append(healed, e.Healed)
			}
			if e.AllWriters >= 0 {
				all = append(all, e.AllWriters)
			} else {
				s.Unrecovered++
			}
		}
		s.FirstAckP50, s.FirstAckMax = p50max(first)
		s.AllWritersP50, s.AllWritersMax = p50max(all)
		s.StallP50, s.StallMax = p50max(stall)
		s.HealedP50, s.HealedMax = p50max(healed)
		out[k] = s
	}
	return out
}

func p50max(ds []time.Duration) (p50, mx time.Duration) {
	if len(ds) == 0 {
		return -1, -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2], s[len(s)-1]
}

// agitator injects faults into a cluster under an ingest.
type agitator struct {
	c     *Cluster
	in    *Ingest
	o     AgitateOptions
	rng   *rand.Rand
	start time.Time
	res   *AgitateResult
	ttl   time.Duration
	// kills counts the FaultServerKill faults, to wipe every other one.
	kills int
}

// Agitate injects faults into c, one at a time, while in writes to it,
// until o.Duration has passed (and o.MinFaultsPerKind of each kind were
// injected) or ctx ends. Every process is running and resumed when it
// returns.
func Agitate(ctx context.Context, c *Cluster, in *Ingest, o AgitateOptions) (*AgitateResult, error) {
	o = o.withDefaults(c.o.ObjectStore)
	a := &agitator{c: c, in: in, o: o, rng: rand.New(rand.NewPCG(o.Seed, 0xa617a7e)), start: time.Now(),
		res: &AgitateResult{Seed: o.Seed}, ttl: c.o.LeaseTTL}
	if err := CheckFaults(o.Kinds, c.o.ObjectStore); err != nil {
		a.res.Stopped = err.Error()
		return a.res, err
	}
	if NeedsNamespaces(o.Kinds) && c.net == nil {
		err := fmt.Errorf("verify: the partition faults need a cluster in network namespaces (ClusterOptions.Namespaces)")
		a.res.Stopped = err.Error()
		return a.res, err
	}
	defer func() { c.EnsureRunning(context.Background()) }()
	var deck []FaultKind
	counts := map[FaultKind]int{}
	for {
		if time.Since(a.start) >= o.Duration && a.enoughFaults(counts) {
			return a.res, nil
		}
		if !sleep(ctx, a.jitter(o.Interval)) {
			a.res.Stopped = "interrupted"
			return a.res, ctx.Err()
		}
		if err := a.reviveUnexpected(ctx); err != nil {
			return a.res, err
		}
		if len(deck) == 0 {
			deck = slices.Clone(o.Kinds)
			a.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		kind := deck[0]
		deck = deck[1:]
		ev, err := a.inject(ctx, kind)
		if err != nil {
			a.res.Stopped = err.Error()
			return a.res, err
		}
		counts[kind]++
		a.res.Events = append(a.res.Events, ev)
		note := ""
		if ev.Wiped {
			note = " (its --data folder deleted)"
		}
		if ev.Detail != "" {
			note = " (" + ev.Detail + ")"
		}
		o.Logf("fault %d %-15s %-8s at %s down %-7v first ack %-9s all writers %-9s after the repair %-9s longest stall %s%s", len(a.res.Events), kind, ev.Target,
			ev.Began.UTC().Format("15:04:05.000"), ev.Down.Round(time.Millisecond), fmtRecovery(ev.FirstAck), fmtRecovery(ev.AllWriters),
			fmtRecovery(ev.Healed), ev.Stall.Round(time.Millisecond), note)
		if ev.AllWriters < 0 && !o.KeepGoing {
			a.res.Stopped = fmt.Sprintf("the writers did not all recover within %v of %s of %s", o.RecoveryTimeout, kind, ev.Target)
			return a.res, errors.New("verify: " + a.res.Stopped)
		}
	}
}

func fmtRecovery(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

func (a *agitator) enoughFaults(counts map[FaultKind]int) bool {
	for _, k := range a.o.Kinds {
		if counts[k] < a.o.MinFaultsPerKind {
			return false
		}
	}
	return true
}

// jitter draws a duration from [0.5, 1.5] × d.
func (a *agitator) jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(a.rng.Int64N(int64(d)+1))
}

// between draws a duration from [lo, hi] × the lease TTL.
func (a *agitator) between(lo, hi float64) time.Duration {
	return time.Duration((lo + (hi-lo)*a.rng.Float64()) * float64(a.ttl))
}

// wipes says whether a fault of kind deletes its target's --data folder
// before the restart: every other server kill on an object store, the
// first included, so that even a short run loses a host. Counting rather
// than drawing keeps the seed's other choices as they were.
func (a *agitator) wipes(kind FaultKind) bool {
	if kind != FaultServerKill || !a.c.o.ObjectStore {
		return false
	}
	a.kills++
	return a.kills%2 == 1
}

// reviveUnexpected restarts processes that exited by themselves.
func (a *agitator) reviveUnexpected(ctx context.Context) error {
	for _, p := range a.c.all() {
		ex, expected, err := p.exited()
		if !ex || expected {
			continue
		}
		msg := fmt.Sprintf("%s exited by itself (%v) %v into the run; log %s:\n%s", p.name, err,
			time.Since(a.start).Round(time.Second), p.log, p.tail(15))
		a.res.Unexpected = append(a.res.Unexpected, msg)
		a.o.Logf("%s", msg)
		if !a.o.KeepGoing {
			a.res.Stopped = p.name + " exited by itself"
			return errors.New("verify: " + a.res.Stopped)
		}
		if err := a.c.restart(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// inject injects one fault, repairs it and measures the recovery.
func (a *agitator) inject(ctx context.Context, kind FaultKind) (FaultEvent, error) {
	ev := FaultEvent{Kind: kind, At: time.Since(a.start), Began: time.Now()}
	var target *proc
	switch kind {
	case FaultServerKill, FaultServerStop:
		target = a.c.servers[a.rng.IntN(len(a.c.servers))]
	case FaultMasterKill:
		target = a.c.leader(ctx)
		if target == nil {
			target = a.c.masters[a.rng.IntN(len(a.c.masters))]
		}
	case FaultEtcdRestart:
		target = a.c.etcd
	default:
		if IsPartitionFault(kind) {
			target = a.partitionTarget(ctx, kind)
		}
	}
	if needsObjectStore(kind) {
		ev.Target = storeName
	} else {
		ev.Target = target.name
	}
	t0 := a.in.Now()
	m := startMeasure(a.in, t0)
	defer m.stop()
	begin := time.Now()
	var err error
	switch kind {
	case FaultServerStop:
		if err = target.signal(syscall.SIGSTOP); err == nil {
			sleep(ctx, a.between(1.5, 3))
			err = target.signal(syscall.SIGCONT)
		}
	case FaultServerEtcdCut, FaultServerIsolate, FaultMasterEtcdCut, FaultSlowLink, FaultLossyLink:
		err = a.partition(ctx, kind, target, &ev)
	case FaultStoreRestart:
		a.c.killStore()
		sleep(ctx, a.between(0.25, 2))
		err = a.c.restartStore(ctx)
	case FaultStoreSlow, FaultStoreThrottle, FaultStoreCut:
		err = a.injectProxyFault(ctx, kind)
	default:
		var pause time.Duration
		switch kind {
		case FaultServerKill:
			pause = a.between(0, 2)
		case FaultMasterKill:
			pause = a.between(0, 1)
		case FaultEtcdRestart:
			pause = a.between(0.25, 2)
		}
		target.kill()
		if ev.Wiped = a.wipes(kind); ev.Wiped {
			err = a.c.wipeHost(target)
		}
		if err == nil {
			sleep(ctx, pause)
			err = a.c.restart(ctx, target)
		}
	}
	if ev.Down == 0 { // a partition measures its own: from the cut to the heal
		ev.Down = time.Since(begin)
	}
	if err != nil {
		return ev, fmt.Errorf("verify: repairing %s of %s: %w", kind, ev.Target, err)
	}
	healed := a.in.Now()
	hm := startMeasure(a.in, healed)
	defer hm.stop()
	ev.FirstAck, ev.AllWriters = m.wait(ctx, a.o.RecoveryTimeout)
	if IsPartitionFault(kind) && ev.AllWriters >= 0 && !waitProgress(ctx, a.in, healed, a.o.RecoveryTimeout) {
		ev.AllWriters = -1 // the writers progressed during the fault, not after it
	}
	m.stop()
	ev.Stall = time.Duration(m.stall.Load())
	_, ev.Healed = hm.wait(ctx, a.o.RecoveryTimeout)
	return ev, nil
}

// measure watches an ingest for its recovery from a fault that began at
// t0 (on the ingest's clock).
type measure struct {
	in       *Ingest
	t0       int64
	firstAck chan time.Duration
	all      chan time.Duration
	done     chan struct{}
	finished chan struct{}
	stall    atomic.Int64 // the longest wait of a writer so far
}

func startMeasure(in *Ingest, t0 int64) *measure {
	m := &measure{in: in, t0: t0, firstAck: make(chan time.Duration, 1), all: make(chan time.Duration, 1),
		done: make(chan struct{}), finished: make(chan struct{})}
	go m.watch()
	return m
}

// watch polls every few milliseconds: the ingest's last-ack time only
// grows, so the first time it passes t0 is (within a poll) the first ack.
func (m *measure) watch() {
	defer close(m.finished)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	gotFirst, gotAll := false, false
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		m.stall.Store(max(m.stall.Load(), m.in.LongestWait(m.t0)))
		if !gotFirst {
			if last := m.in.LastAck(); last > m.t0 {
				m.firstAck <- time.Duration(last - m.t0)
				gotFirst = true
			}
		}
		if !gotAll && m.in.AllProgressedSince(m.t0) {
			m.all <- time.Duration(m.in.Now() - m.t0)
			gotAll = true
		}
	}
}

// wait waits up to timeout for both measures; a missing one is -1.
func (m *measure) wait(ctx context.Context, timeout time.Duration) (firstAck, all time.Duration) {
	firstAck, all = -1, -1
	t := time.NewTimer(timeout)
	defer t.Stop()
	for firstAck < 0 || all < 0 {
		select {
		case d := <-m.firstAck:
			firstAck = d
		case d := <-m.all:
			all = d
		case <-t.C:
			return firstAck, all
		case <-ctx.Done():
			return firstAck, all
		}
	}
	return firstAck, all
}

func (m *measure) stop() {
	select {
	case <-m.done:
	default:
		close(m.done)
	}
	<-m.finished
}

// sleep waits for d or the end of ctx; it reports false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
