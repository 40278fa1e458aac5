package verify

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/verify/storeproxy"
)

// Each store fault switches the proxy to its kind for a drawn while: slow
// answers of 1 to 3 s for 1.5 to 3 TTLs, throttling and cuts for 0.5 to
// 2 TTLs.
func TestProxyFaultsDrawTheirShape(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	a := &agitator{rng: rand.New(rand.NewPCG(seed, 1)), ttl: 2 * time.Second}
	for range 50 {
		f, d := a.proxyFault(FaultStoreSlow)
		if f.Kind != storeproxy.Slow || f.Delay < time.Second || f.Delay > 3*time.Second || d < 3*time.Second || d > 6*time.Second {
			t.Fatalf("store-slow: %+v for %v", f, d)
		}
		f, d = a.proxyFault(FaultStoreThrottle)
		if f.Kind != storeproxy.SlowDown || d < time.Second || d > 4*time.Second {
			t.Fatalf("store-throttle: %+v for %v", f, d)
		}
		f, d = a.proxyFault(FaultStoreCut)
		if f.Kind != storeproxy.Cut || f.Every != 2 || d < time.Second || d > 4*time.Second {
			t.Fatalf("store-cut: %+v for %v", f, d)
		}
	}
}

// The report prints, per fault kind, the unavailability after the repair
// beside the one from the fault's start.
func TestReportPrintsTheUnavailabilityAfterTheRepair(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	res := &AgitateResult{Events: []FaultEvent{
		{Kind: FaultStoreRestart, FirstAck: ms(9000), AllWriters: ms(14000), Healed: ms(1500)},
		{Kind: FaultStoreRestart, FirstAck: ms(8000), AllWriters: ms(13000), Healed: ms(900)},
		{Kind: FaultStoreRestart, FirstAck: ms(7000), AllWriters: ms(15000), Healed: ms(2500)},
		{Kind: FaultStoreThrottle, FirstAck: ms(1), AllWriters: ms(4000), Healed: -1},
	}}
	sum := res.Summary()
	if s := sum[FaultStoreRestart]; s.HealedP50 != ms(1500) || s.HealedMax != ms(2500) {
		t.Errorf("store-restart after the repair: p50 %v max %v, want 1.5s and 2.5s", s.HealedP50, s.HealedMax)
	}
	if s := sum[FaultStoreThrottle]; s.HealedP50 >= 0 {
		t.Errorf("store-throttle never recovered after the repair, summed up as %v", s.HealedP50)
	}
	var b strings.Builder
	(&RunResult{Faults: res}).WriteTo(&b)
	for _, want := range []string{"after repair p50 / max", "1.5s / 2.5s", "never / never"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
