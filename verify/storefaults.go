package verify

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tabuladb/tabula/verify/storeproxy"
)

// Faults of an object store that answers but misbehaves, injected by the
// proxy in front of SeaweedFS (storeproxy) while the Tabula processes and
// the store keep running. After each, every acknowledged write must still
// be there, nothing refused may appear, and the tablets must serve again
// once the store behaves.
const (
	// FaultStoreSlow: every answer of the store is held back 1 to 3 s
	// (the store has carried the request out by then), for 1.5 to 3
	// lease TTLs.
	FaultStoreSlow FaultKind = "store-slow"
	// FaultStoreThrottle: every request is refused with 503 SlowDown,
	// S3's answer when it throttles, for 0.5 to 2 lease TTLs.
	FaultStoreThrottle FaultKind = "store-throttle"
	// FaultStoreCut: every other request has its connection cut, in turn
	// before it reaches the store (it did not happen) and in the middle
	// of the store's answer (it happened, and the answer is lost), for
	// 0.5 to 2 lease TTLs.
	FaultStoreCut FaultKind = "store-cut"
)

// storeFaults are the fault kinds that need a cluster on an object store.
var storeFaults = []FaultKind{FaultStoreRestart, FaultStoreSlow, FaultStoreThrottle, FaultStoreCut}

// needsObjectStore says whether a fault kind applies only to a cluster
// on an object store.
func needsObjectStore(k FaultKind) bool { return slices.Contains(storeFaults, k) }

// proxyFault draws what the proxy does for one fault of kind, and for
// how long.
func (a *agitator) proxyFault(kind FaultKind) (storeproxy.Fault, time.Duration) {
	switch kind {
	case FaultStoreSlow:
		delay := time.Second + time.Duration(a.rng.Int64N(int64(2*time.Second)+1))
		return storeproxy.Fault{Kind: storeproxy.Slow, Delay: delay}, a.between(1.5, 3)
	case FaultStoreThrottle:
		return storeproxy.Fault{Kind: storeproxy.SlowDown}, a.between(0.5, 2)
	default: // FaultStoreCut
		return storeproxy.Fault{Kind: storeproxy.Cut, Every: 2}, a.between(0.5, 2)
	}
}

// injectProxyFault switches the proxy in front of the store to a fault
// of kind, waits, and heals it.
func (a *agitator) injectProxyFault(ctx context.Context, kind FaultKind) error {
	p := a.c.store.proxy
	if p == nil {
		return fmt.Errorf("verify: %s needs the store's proxy (ClusterOptions.ObjectStore)", kind)
	}
	f, d := a.proxyFault(kind)
	before := p.Stats()
	p.Set(f)
	sleep(ctx, d)
	p.Set(storeproxy.Fault{})
	after := p.Stats()
	a.o.Logf("%s for %v: %d requests delayed %v, %d throttled, %d cut before the store, %d cut in its answer", kind,
		d.Round(time.Millisecond), after.Delayed-before.Delayed, f.Delay, after.Throttled-before.Throttled,
		after.CutRequests-before.CutRequests, after.CutResponses-before.CutResponses)
	return nil
}
