package families

import (
	"math"
	"testing"
	"time"
)

func TestCondemned(t *testing.T) {
	const now = int64(1_700_000_000_000_000)
	hour := time.Hour.Microseconds()
	fresh, old := now-hour/2, now-2*hour // with a TTL of one hour
	type probe struct {
		ts        int64
		index     int
		condemned bool
	}
	tests := []struct {
		name      string
		f         Family
		unlimited bool
		probes    []probe
	}{
		{"no rule", Family{Name: "cf"}, true, []probe{
			{fresh, 0, false}, {old, 100, false}, {math.MinInt64, 1 << 30, false},
		}},
		{"versions only", Family{Name: "cf", MaxVersions: 2}, false, []probe{
			{old, 0, false}, {old, 1, false}, {fresh, 2, true}, {old, 3, true},
		}},
		{"ttl only", Family{Name: "cf", TTL: time.Hour}, false, []probe{
			{fresh, 10, false}, {now - hour, 0, false}, {now - hour - 1, 0, true}, {old, 0, true},
		}},
		{"union", Family{Name: "cf", MaxVersions: 1, TTL: time.Hour}, false, []probe{
			{fresh, 0, false}, {fresh, 1, true}, {old, 0, true}, {old, 1, true},
		}},
		{"intersection", Family{Name: "cf", MaxVersions: 1, TTL: time.Hour, GC: GCIntersection}, false, []probe{
			{fresh, 0, false}, {fresh, 1, false}, {old, 0, false}, {old, 1, true},
		}},
		{"intersection with one rule acts as that rule", Family{Name: "cf", TTL: time.Hour, GC: GCIntersection}, false, []probe{
			{fresh, 5, false}, {old, 0, true},
		}},
		{"intersection with versions only", Family{Name: "cf", MaxVersions: 1, GC: GCIntersection}, false, []probe{
			{old, 0, false}, {fresh, 1, true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.f.Policy(now)
			if p.Unlimited() != tc.unlimited {
				t.Errorf("Unlimited() = %v, want %v", p.Unlimited(), tc.unlimited)
			}
			for _, pr := range tc.probes {
				if got := p.Condemned(pr.ts, pr.index); got != pr.condemned {
					t.Errorf("Condemned(now%+d, %d) = %v, want %v", pr.ts-now, pr.index, got, pr.condemned)
				}
			}
		})
	}
}

func TestTTLDoesNotOverflow(t *testing.T) {
	ttl := time.Duration(math.MaxInt64 / 1000 * 1000)
	f := Family{Name: "cf", TTL: ttl}
	for _, now := range []int64{0, 1, -5, math.MinInt64 + ttl.Microseconds() - 1, math.MinInt64 + 1, math.MinInt64} {
		p := f.Policy(now)
		// now - ttl underflows: wrapping around would give a huge cutoff
		// that condemns every cell.
		for _, ts := range []int64{now, math.MaxInt64, 0} {
			if ts >= now && p.Condemned(ts, 0) {
				t.Errorf("now=%d: cell at %d condemned by a TTL reaching before the epoch of int64", now, ts)
			}
		}
	}
	// Intersected with a version rule, a TTL reaching before time began
	// keeps every version; in a union the version rule still applies.
	for _, gc := range []GCMode{GCIntersection, GCUnion} {
		p := (&Family{Name: "cf", MaxVersions: 1, TTL: ttl, GC: gc}).Policy(math.MinInt64 + 5)
		if got := p.Condemned(math.MinInt64, 3); got != (gc == GCUnion) {
			t.Errorf("%v: Condemned(MinInt64, 3) = %v", gc, got)
		}
	}
	// A 200-year TTL at a real clock still works normally.
	p := (&Family{Name: "cf", TTL: 200 * 365 * 24 * time.Hour}).Policy(1_700_000_000_000_000)
	if p.Condemned(0, 0) {
		t.Error("a 200-year TTL condemned a cell from 1970")
	}
}

func TestExpiredFileCutoff(t *testing.T) {
	const now = int64(10_000_000_000)
	tests := []struct {
		name string
		f    Family
		ok   bool
	}{
		{"no rule", Family{Name: "cf"}, false},
		{"versions only", Family{Name: "cf", MaxVersions: 1}, false},
		{"ttl only", Family{Name: "cf", TTL: time.Second}, true},
		{"ttl only intersection", Family{Name: "cf", TTL: time.Second, GC: GCIntersection}, true},
		{"union", Family{Name: "cf", TTL: time.Second, MaxVersions: 3}, true},
		{"intersection", Family{Name: "cf", TTL: time.Second, MaxVersions: 3, GC: GCIntersection}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.f.Policy(now)
			cutoff, ok := p.ExpiredFileCutoff()
			if ok != tc.ok {
				t.Fatalf("ExpiredFileCutoff() ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if want := now - 1_000_000; cutoff != want {
				t.Fatalf("cutoff = %d, want %d", cutoff, want)
			}
			// Every cell of a file with newest timestamp < cutoff is condemned, whatever its rank.
			for _, ts := range []int64{cutoff - 1, 0} {
				for idx := 0; idx < 5; idx++ {
					if !p.Condemned(ts, idx) {
						t.Errorf("cell ts=%d index=%d in a droppable file is not condemned", ts, idx)
					}
				}
			}
		})
	}
}

// BenchmarkCondemned measures the per-cell cost the engine pays.
func BenchmarkCondemned(b *testing.B) {
	const now = int64(1_700_000_000_000_000)
	for _, f := range []Family{
		{Name: "flat union", MaxVersions: 3, TTL: time.Hour},
		{Name: "flat intersection", MaxVersions: 3, TTL: time.Hour, GC: GCIntersection},
		{Name: "nested", GCRule: UnionRule(MaxVersionsRule(3), IntersectionRule(MaxAgeRule(7*24*time.Hour), MaxVersionsRule(1)))},
	} {
		b.Run(f.Name, func(b *testing.B) {
			p := f.Policy(now)
			n := 0
			for i := range b.N {
				if p.Condemned(now-int64(i&1023)*10_000_000, i&7) {
					n++
				}
			}
			_ = n
		})
	}
}

func BenchmarkPolicy(b *testing.B) {
	const now = int64(1_700_000_000_000_000)
	for _, f := range []Family{
		{Name: "flat union", MaxVersions: 3, TTL: time.Hour},
		{Name: "nested", GCRule: UnionRule(MaxVersionsRule(3), IntersectionRule(MaxAgeRule(7*24*time.Hour), MaxVersionsRule(1)))},
	} {
		b.Run(f.Name, func(b *testing.B) {
			for range b.N {
				_ = f.Policy(now)
			}
		})
	}
}
