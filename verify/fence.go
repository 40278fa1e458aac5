package verify

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// A fence probe checks docs/OWNERSHIP.md's self-fencing directly, during
// a FaultServerEtcdCut: "a server that cannot renew its lease stops
// serving writes before the lease can have expired at etcd". It writes
// straight to one tablet of the server (at the epoch it holds, bypassing
// the client's routing) every probeEvery, before and throughout the cut,
// while an etcd watch on the server's registration notes when its lease
// is gone, the earliest moment the master may hand the tablet on. A probe
// sent after that moment and acknowledged is a violation: the server
// acknowledged a write another owner's replay may not hold. The probe is
// a delete of a row no workload writes (the tablet's start key followed
// by a NUL and "tabula-verify-probe"), so it leaves nothing the checker
// reads.

const (
	probeEvery   = 25 * time.Millisecond
	probeTimeout = 500 * time.Millisecond
	// maxProbes bounds the probes of one fault (3 lease TTLs of 2 s hold
	// about 240).
	maxProbes = 4000
	// probeReady bounds the wait for the first acknowledged probe before
	// the cut.
	probeReady = 5 * time.Second
)

// FenceCheck is what a fence probe saw.
type FenceCheck struct {
	// Tablet and Epoch are the probed tablet, owned by the target.
	Tablet string
	Epoch  int64
	// LeaseGone is when the watch saw the target's lease gone at etcd,
	// since the cut; negative if not before the fault was healed.
	LeaseGone time.Duration
	// AckedBeforeCut counts the probes acknowledged before the cut.
	AckedBeforeCut int
	// LastAck is when the last acknowledged probe was sent, since the
	// cut; negative if none was acknowledged after the cut.
	LastAck time.Duration
	// After counts the probes sent after the lease was seen gone;
	// LateAcks those of them acknowledged, each a violation.
	After, LateAcks int
}

// Conclusive reports whether the probe saw the lease go and probed after.
func (f *FenceCheck) Conclusive() bool { return f.LeaseGone >= 0 && f.After > 0 }

func (f *FenceCheck) String() string {
	if f.LeaseGone < 0 {
		return fmt.Sprintf("tablet %s@%d: lease not seen gone during the cut (%d probes acked before it, last ack %s after it): inconclusive",
			f.Tablet, f.Epoch, f.AckedBeforeCut, fmtSince(f.LastAck))
	}
	verdict := "ok"
	if f.LateAcks > 0 {
		verdict = "VIOLATION: acknowledged after the lease was gone"
	}
	return fmt.Sprintf("tablet %s@%d: last ack sent %s after the cut, lease gone %s after it; %d probes after that, %d acknowledged: %s",
		f.Tablet, f.Epoch, fmtSince(f.LastAck), f.LeaseGone.Round(time.Millisecond), f.After, f.LateAcks, verdict)
}

func fmtSince(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// probe is one probe write: when it was sent, and whether it was acked.
type probe struct {
	at    time.Time
	acked bool
}

// fenceProbe probes one tablet server during a cut. Its goroutines are
// owned by it: finish waits for them.
type fenceProbe struct {
	check  FenceCheck
	cancel context.CancelFunc
	wg     sync.WaitGroup
	conn   *grpc.ClientConn
	etcd   meta.Store

	// mu protects the fields below.
	mu        sync.Mutex
	probes    []probe
	cutAt     time.Time
	leaseGone time.Time
}

// startFenceProbe finds a tablet the target serves under its current
// lease and probes it until one probe is acknowledged (or probeReady
// passed); the watch on its registration runs from then on.
func startFenceProbe(ctx context.Context, c *Cluster, target *proc) (_ *fenceProbe, err error) {
	cli, err := c.etcdClient()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cli.Close()
		}
	}()
	l := meta.NewLayout(clusterName)
	gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
	defer gcancel()
	srv, rev, err := meta.GetServer(gctx, cli, l, target.name)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, fmt.Errorf("verify: %s is not registered", target.name)
	}
	if err != nil {
		return nil, err
	}
	tablets, _, err := meta.ListAllTablets(gctx, cli, l) // undecodable ones are skipped
	if err != nil {
		return nil, err
	}
	var tab *meta.TabletRecord
	for i := range tablets {
		r := &tablets[i].TabletRecord
		owned := r.State == meta.StateAssigned || r.State == meta.StateServing
		if owned && r.Server == target.name && r.Lease == srv.Lease {
			tab = r
			break
		}
	}
	if tab == nil {
		return nil, fmt.Errorf("verify: %s serves no tablet under lease %x", target.name, srv.Lease)
	}
	conn, err := grpc.NewClient(target.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	f := &fenceProbe{cancel: cancel, conn: conn, etcd: cli,
		check: FenceCheck{Tablet: tab.ID, Epoch: tab.Epoch, LeaseGone: -1, LastAck: -1}}
	row := append(append([]byte(nil), tab.Start...), "\x00tabula-verify-probe"...)
	req := &tabulapb.MutateRowRequest{
		Tablet:    &tabulapb.TabletRef{Table: tab.Table, TabletId: tab.ID, Epoch: tab.Epoch},
		RowKey:    row,
		Mutations: []*tabulapb.Mutation{{Mutation: &tabulapb.Mutation_DeleteFromRow_{DeleteFromRow: &tabulapb.Mutation_DeleteFromRow{}}}},
	}
	watch := meta.WatchServer(pctx, cli, l, target.name, rev+1)
	firstAck := make(chan struct{})
	f.wg.Add(2)
	go f.probeLoop(pctx, tabulapb.NewTabletServerClient(conn), req, firstAck)
	go f.watchLease(watch, srv.Lease)
	t := time.NewTimer(probeReady)
	defer t.Stop()
	select {
	case <-firstAck:
	case <-t.C:
	case <-ctx.Done():
	}
	return f, nil
}

// probeLoop sends a probe every probeEvery, at most maxProbes.
func (f *fenceProbe) probeLoop(ctx context.Context, ts tabulapb.TabletServerClient, req *tabulapb.MutateRowRequest, firstAck chan struct{}) {
	defer f.wg.Done()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	acked := false
	for range maxProbes {
		at := time.Now()
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := ts.MutateRow(cctx, req)
		cancel()
		if ctx.Err() != nil {
			return // cut short by finish: its outcome says nothing
		}
		f.mu.Lock()
		f.probes = append(f.probes, probe{at: at, acked: err == nil})
		f.mu.Unlock()
		if err == nil && !acked {
			acked = true
			close(firstAck)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// watchLease notes when the server's registration under lease is gone:
// its key deleted (the lease expired) or bound to another lease.
func (f *fenceProbe) watchLease(watch iter.Seq[meta.ServerChange], lease int64) {
	defer f.wg.Done()
	for ch := range watch {
		if ch.Deleted || ch.Lease != lease {
			f.mu.Lock()
			f.leaseGone = time.Now()
			f.mu.Unlock()
			return
		}
	}
}

// cut marks the moment the cut began.
func (f *fenceProbe) cut() {
	f.mu.Lock()
	f.cutAt = time.Now()
	f.mu.Unlock()
}

// finish stops the probe and returns what it saw.
func (f *fenceProbe) finish() *FenceCheck {
	f.cancel()
	f.wg.Wait()
	f.conn.Close()
	f.etcd.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	c := judgeFence(f.check, f.probes, f.cutAt, f.leaseGone)
	return &c
}

// judgeFence fills c from the probes, the cut's time and the time the
// lease was seen gone (zero: not seen).
func judgeFence(c FenceCheck, probes []probe, cutAt, leaseGone time.Time) FenceCheck {
	c.LeaseGone, c.LastAck = -1, -1
	if !leaseGone.IsZero() {
		c.LeaseGone = leaseGone.Sub(cutAt)
	}
	for _, p := range probes {
		switch {
		case p.at.Before(cutAt):
			if p.acked {
				c.AckedBeforeCut++
			}
			continue
		case p.acked:
			c.LastAck = p.at.Sub(cutAt)
		}
		if !leaseGone.IsZero() && p.at.After(leaseGone) {
			c.After++
			if p.acked {
				c.LateAcks++
			}
		}
	}
	return c
}

// FenceSummary sums up the fence probes of a run.
type FenceSummary struct {
	Checks, Conclusive int
	// After counts the probes sent after a lease was seen gone; LateAcks
	// those of them acknowledged (violations).
	After, LateAcks int
}

// Fences sums up the events' fence probes.
func (r *AgitateResult) Fences() FenceSummary {
	var s FenceSummary
	for _, e := range r.Events {
		if e.Fence == nil {
			continue
		}
		s.Checks++
		if e.Fence.Conclusive() {
			s.Conclusive++
		}
		s.After += e.Fence.After
		s.LateAcks += e.Fence.LateAcks
	}
	return s
}
