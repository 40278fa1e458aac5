package verify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// The partition faults. Each needs a cluster in network namespaces
// (ClusterOptions.Namespaces, netns.go), which Run starts when one is
// asked for. Rules drop packets (a black hole, not a refusal), as a real
// partition does; healing removes them. "A random tablet server" is drawn
// among those that own a tablet, if any does: one whose tablets all moved
// away while it was cut off before would take a fault nobody notices.
const (
	// FaultServerEtcdCut: cut a random tablet server off from etcd for 1.5
	// to 3 lease TTLs (past its lease: its tablets move) while clients and
	// masters still reach it. It must stop acknowledging before its lease
	// can have expired at etcd: a probe writes straight to one of its
	// tablets throughout, and an acknowledgement of a probe sent after
	// the lease was seen gone is a violation (FenceCheck).
	FaultServerEtcdCut FaultKind = "server-etcd-cut"
	// FaultServerIsolate: cut a random tablet server off from everything
	// for 1.5 to 3 lease TTLs.
	FaultServerIsolate FaultKind = "server-isolate"
	// FaultMasterEtcdCut: cut the leader master off from etcd for 1.5 to
	// 3 lease TTLs (past its session: a standby takes over).
	FaultMasterEtcdCut FaultKind = "master-etcd-cut"
	// FaultSlowLink: limit a random tablet server's link to 128 kbit/s to
	// 1 Mbit/s each way (tc tbf) for 1 to 3 lease TTLs.
	FaultSlowLink FaultKind = "slow-link"
	// FaultLossyLink: drop 10% to 40% of a random tablet server's packets
	// each way (nftables numgen) for 1 to 3 lease TTLs.
	FaultLossyLink FaultKind = "lossy-link"
)

// PartitionFaults lists the partition fault kinds.
var PartitionFaults = []FaultKind{FaultServerEtcdCut, FaultServerIsolate, FaultMasterEtcdCut, FaultSlowLink, FaultLossyLink}

// IsPartitionFault reports whether k needs a cluster in namespaces.
func IsPartitionFault(k FaultKind) bool { return slices.Contains(PartitionFaults, k) }

// NeedsNamespaces reports whether any of kinds is a partition fault.
func NeedsNamespaces(kinds []FaultKind) bool { return slices.ContainsFunc(kinds, IsPartitionFault) }

// procPort is the port every process in a namespace of its own listens on.
const procPort = 7000

// startNetwork makes the cluster's network (with Namespaces).
func (c *Cluster) startNetwork() error {
	if !c.o.Namespaces {
		return nil
	}
	n, err := newNetwork(c.o.Logf)
	if err != nil {
		return err
	}
	c.net, c.nodes = n, map[string]*netNode{}
	return nil
}

// placeProc chooses where a process listens: a free loopback port; with
// Namespaces, etcd on the bridge's address and every other process on
// its own namespace's address.
func (c *Cluster) placeProc(name string) (addr, ns string, err error) {
	if c.net == nil {
		addr, err = freeAddr()
		return addr, "", err
	}
	if name == "etcd" {
		l, err := net.Listen("tcp", netip.AddrPortFrom(c.net.host, 0).String())
		if err != nil {
			return "", "", err
		}
		defer l.Close()
		return l.Addr().String(), "", nil
	}
	nd, err := c.net.addNode(len(c.nodes))
	if err != nil {
		return "", "", err
	}
	c.nodes[name] = nd
	return netip.AddrPortFrom(nd.addr, procPort).String(), nd.ns, nil
}

// partitionTarget picks the process a partition fault hits.
func (a *agitator) partitionTarget(ctx context.Context, kind FaultKind) *proc {
	if kind == FaultMasterEtcdCut {
		if m := a.c.leader(ctx); m != nil {
			return m
		}
		return a.c.masters[a.rng.IntN(len(a.c.masters))]
	}
	// A server that owns no tablet (its tablets moved while it was cut
	// off before) would make a fault nobody notices.
	ss := a.c.owners(ctx)
	if len(ss) == 0 {
		ss = a.c.servers
	}
	return ss[a.rng.IntN(len(ss))]
}

// owners returns the tablet servers that own a tablet, in the cluster's
// order; none if etcd does not answer.
func (c *Cluster) owners(ctx context.Context) []*proc {
	var tablets []meta.VersionedTablet
	err := c.withEtcd(ctx, func(ctx context.Context, cli meta.Store) (err error) {
		tablets, _, err = meta.ListAllTablets(ctx, cli, meta.NewLayout(clusterName)) // undecodable ones own nothing
		return err
	})
	if err != nil {
		return nil
	}
	own := map[string]bool{}
	for _, r := range tablets {
		if r.State == meta.StateAssigned || r.State == meta.StateServing {
			own[r.Server] = true
		}
	}
	var out []*proc
	for _, s := range c.servers {
		if own[s.name] {
			out = append(out, s)
		}
	}
	return out
}

// partition injects a partition fault on target and heals it. Every
// random choice is drawn before anything happens, so a seed replays.
func (a *agitator) partition(ctx context.Context, kind FaultKind, target *proc, ev *FaultEvent) error {
	nd := a.c.nodes[target.name]
	if nd == nil {
		return fmt.Errorf("verify: %s needs a cluster in network namespaces (%s has none)", kind, target.name)
	}
	etcd, err := netip.ParseAddrPort(a.c.etcd.addr)
	if err != nil {
		return err
	}
	var in, out []string
	var rate string
	var hold time.Duration
	switch kind {
	case FaultServerEtcdCut, FaultMasterEtcdCut:
		hold = a.between(1.5, 3)
		in = []string{fmt.Sprintf("ip saddr %s tcp sport %d drop", etcd.Addr(), etcd.Port())}
		out = []string{fmt.Sprintf("ip daddr %s tcp dport %d drop", etcd.Addr(), etcd.Port())}
	case FaultServerIsolate:
		hold = a.between(1.5, 3)
		in = []string{fmt.Sprintf("iifname %q drop", nd.nsLink)}
		out = []string{fmt.Sprintf("oifname %q drop", nd.nsLink)}
	case FaultLossyLink:
		hold = a.between(1, 3)
		pct := 10 + a.rng.IntN(31)
		in = []string{fmt.Sprintf("iifname %q numgen random mod 100 < %d drop", nd.nsLink, pct)}
		out = []string{fmt.Sprintf("oifname %q numgen random mod 100 < %d drop", nd.nsLink, pct)}
		ev.Detail = strconv.Itoa(pct) + "% loss"
	case FaultSlowLink:
		hold = a.between(1, 3)
		rate = []string{"128kbit", "256kbit", "512kbit", "1mbit"}[a.rng.IntN(4)]
		ev.Detail = rate + "/s"
	default:
		return fmt.Errorf("verify: %s is not a partition fault", kind)
	}

	var fence *fenceProbe
	if kind == FaultServerEtcdCut {
		if fence, err = startFenceProbe(ctx, a.c, target); err != nil {
			a.o.Logf("fence probe of %s not started: %v", target.name, err)
		}
	}
	if rate != "" {
		err = nd.setRate(rate)
	} else {
		err = nd.setRules(in, out)
	}
	if fence != nil {
		fence.cut()
	}
	cut := time.Now()
	if err == nil {
		sleep(ctx, hold)
	}
	// Heal even after a failed step: a half-made rule must not outlive
	// the fault.
	var herr error
	if rate != "" {
		herr = nd.clearRate()
	} else {
		herr = nd.clearRules()
	}
	ev.Down = time.Since(cut)
	if fence != nil {
		ev.Fence = fence.finish()
		a.o.Logf("fence of %s: %s", target.name, ev.Fence)
	}
	return errors.Join(err, herr)
}

// waitProgress waits up to timeout until every writer has progressed
// after t (on the ingest's clock); it reports whether they did.
func waitProgress(ctx context.Context, in *Ingest, t int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !in.AllProgressedSince(t) {
		if time.Now().After(deadline) || !sleep(ctx, 5*time.Millisecond) {
			return false
		}
	}
	return true
}
