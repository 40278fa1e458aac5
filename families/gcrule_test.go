package families

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// refCondemned is the meaning of a rule tree, written as directly as
// possible and independently of Policy's staircase.
func refCondemned(r *GCRule, now, ts int64, rank int) bool {
	switch r.Kind {
	case RuleMaxVersions:
		return rank >= r.MaxVersions
	case RuleMaxAge:
		return ts < now-r.MaxAge.Microseconds()
	case RuleUnion:
		for _, c := range r.Rules {
			if refCondemned(c, now, ts, rank) {
				return true
			}
		}
		return false
	case RuleIntersection:
		if len(r.Rules) == 0 {
			return false // an empty intersection condemns nothing
		}
		for _, c := range r.Rules {
			if !refCondemned(c, now, ts, rank) {
				return false
			}
		}
		return true
	}
	panic("unknown kind")
}

func TestNestedRuleCondemned(t *testing.T) {
	const now = int64(1_700_000_000_000_000)
	day := (24 * time.Hour).Microseconds()
	fresh, old := now-day, now-8*day // with an age of 7 days
	type probe struct {
		ts        int64
		rank      int
		condemned bool
	}
	tests := []struct {
		rule      string
		unlimited bool
		probes    []probe
	}{
		{"union(versions=3,intersection(age=7d,versions=1))", false, []probe{
			{fresh, 0, false}, {fresh, 1, false}, {fresh, 2, false}, {fresh, 3, true},
			{old, 0, false}, {old, 1, true}, {old, 2, true},
		}},
		{"intersection(union(versions=2,age=7d),versions=1)", false, []probe{
			{fresh, 0, false}, {fresh, 1, false}, {fresh, 2, true}, {old, 0, false}, {old, 1, true},
		}},
		{"intersection(age=7d,age=1d)", false, []probe{ // the larger age
			{now - 2*day, 5, false}, {old, 0, true},
		}},
		{"union(age=7d,age=1d)", false, []probe{ // the smaller age
			{now - 2*day, 0, true}, {now - day/2, 9, false},
		}},
		{"union(versions=5,versions=2)", false, []probe{{fresh, 1, false}, {fresh, 2, true}}},
		{"intersection(versions=5,versions=2)", false, []probe{{fresh, 4, false}, {fresh, 5, true}}},
		{"union()", true, []probe{{old, 100, false}}},
		{"intersection()", true, []probe{{math.MinInt64, 100, false}}},
		{"intersection(versions=1,union())", true, []probe{{old, 100, false}}},
		{"union(versions=1,intersection())", false, []probe{{old, 0, false}, {fresh, 1, true}}},
		{"age=7d", false, []probe{{now - 7*day, 0, false}, {now - 7*day - 1, 0, true}}},
		{"versions=1", false, []probe{{old, 0, false}, {fresh, 1, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			r, err := ParseGCRule(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			f := Family{Name: "cf", GCRule: r}
			p := f.Policy(now)
			if p.Unlimited() != tc.unlimited {
				t.Errorf("Unlimited() = %v, want %v", p.Unlimited(), tc.unlimited)
			}
			for _, pr := range tc.probes {
				if got := p.Condemned(pr.ts, pr.rank); got != pr.condemned {
					t.Errorf("Condemned(now%+d, %d) = %v, want %v", pr.ts-now, pr.rank, got, pr.condemned)
				}
				if ref := refCondemned(r, now, pr.ts, pr.rank); ref != pr.condemned {
					t.Errorf("reference(now%+d, %d) = %v, want %v", pr.ts-now, pr.rank, ref, pr.condemned)
				}
			}
		})
	}
}

// randRule builds a random tree of at most depth levels. Ages and version
// counts come from small sets so that rules often meet at the same values.
func randRule(rng *rand.Rand, depth int) *GCRule {
	k := rng.Intn(4)
	if depth <= 1 {
		k = rng.Intn(2)
	}
	switch k {
	case 0:
		return MaxVersionsRule(1 + rng.Intn(6))
	case 1:
		return MaxAgeRule(time.Duration(1+rng.Intn(8)) * time.Hour)
	}
	r := &GCRule{Kind: RuleUnion}
	if k == 3 {
		r.Kind = RuleIntersection
	}
	for n := rng.Intn(4); n > 0; n-- {
		r.Rules = append(r.Rules, randRule(rng, depth-1))
	}
	return r
}

// probes returns (timestamp, rank) pairs at and around every boundary a
// rule of randRule can have, and random ones.
func probes(rng *rand.Rand, now int64) (ts []int64, ranks []int) {
	hour := time.Hour.Microseconds()
	for h := int64(0); h <= 9; h++ {
		ts = append(ts, now-h*hour-1, now-h*hour, now-h*hour+1)
	}
	for range 10 {
		ts = append(ts, now-rng.Int63n(10*hour))
	}
	ts = append(ts, math.MinInt64, math.MaxInt64)
	for r := 0; r <= 8; r++ {
		ranks = append(ranks, r)
	}
	return ts, append(ranks, 1000)
}

func TestPolicyMatchesReferenceOnRandomTrees(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for iter := range 3000 {
		r := randRule(rng, 1+rng.Intn(4))
		if err := r.Validate(); err != nil {
			t.Fatalf("seed %d: random rule %s invalid: %v", seed, r, err)
		}
		now := 1_700_000_000_000_000 + rng.Int63n(1<<40)
		f := Family{Name: "cf", GCRule: r}
		p := f.Policy(now)
		tss, ranks := probes(rng, now)
		any := false
		for _, ts := range tss {
			for _, rank := range ranks {
				want := refCondemned(r, now, ts, rank)
				any = any || want
				if got := p.Condemned(ts, rank); got != want {
					t.Fatalf("seed %d iter %d: rule %s: Condemned(now%+d, %d) = %v, reference %v", seed, iter, r, ts-now, rank, got, want)
				}
			}
		}
		if p.Unlimited() && any {
			t.Fatalf("seed %d iter %d: rule %s: Unlimited() but the reference condemns cells", seed, iter, r)
		}
		cutoff, ok := p.ExpiredFileCutoff()
		if !ok {
			continue
		}
		// Soundness: every cell older than the cutoff is condemned, at any
		// rank, so a whole file of them may go unread.
		for _, ts := range append(tss, cutoff-1) {
			if ts >= cutoff {
				continue
			}
			for _, rank := range ranks {
				if !refCondemned(r, now, ts, rank) {
					t.Fatalf("seed %d iter %d: rule %s: cutoff now%+d lets a file with a cell at now%+d rank %d go, which the reference keeps",
						seed, iter, r, cutoff-now, ts-now, rank)
				}
			}
		}
		// And it is the largest such cutoff: the newest version at the
		// cutoff itself survives.
		if refCondemned(r, now, cutoff, 0) {
			t.Errorf("seed %d iter %d: rule %s: cutoff now%+d is not the largest", seed, iter, r, cutoff-now)
		}
	}
}

func TestExpiredFileCutoffOfNestedRules(t *testing.T) {
	const now = int64(10_000_000_000)
	for _, tc := range []struct {
		rule string
		ok   bool
	}{
		{"union(versions=3,intersection(age=7d,versions=1))", false},
		{"union(age=1h,intersection(age=7d,versions=1))", true},
		{"intersection(age=1h,union(age=2h,versions=1))", true}, // age=2h alone at rank 0
		{"intersection(age=1h,union(versions=2,versions=1))", false},
		{"intersection(age=1h,union(age=2h,age=3h))", true},
		{"union(versions=1)", false},
		{"intersection()", false},
	} {
		f := Family{Name: "cf", GCRule: mustRule(t, tc.rule)}
		p := f.Policy(now)
		if _, ok := p.ExpiredFileCutoff(); ok != tc.ok {
			t.Errorf("%s: ExpiredFileCutoff ok = %v, want %v", tc.rule, ok, tc.ok)
		}
	}
}

// The simple form compiles to what its EffectiveGCRule does.
func TestSimpleFormEqualsItsTree(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for range 500 {
		f := Family{Name: "cf", MaxVersions: rng.Intn(4), TTL: time.Duration(rng.Intn(4)) * time.Hour, GC: GCMode(rng.Intn(2))}
		now := 1_700_000_000_000_000 + rng.Int63n(1<<40)
		p := f.Policy(now)
		tree := f.EffectiveGCRule()
		if (tree == nil) != p.Unlimited() {
			t.Fatalf("seed %d: %s: tree %s, Unlimited %v", seed, f.Spec(), tree, p.Unlimited())
		}
		tss, ranks := probes(rng, now)
		for _, ts := range tss {
			for _, rank := range ranks {
				want := tree != nil && refCondemned(tree, now, ts, rank)
				if got := p.Condemned(ts, rank); got != want {
					t.Fatalf("seed %d: %s (tree %s): Condemned(now%+d, %d) = %v, want %v", seed, f.Spec(), tree, ts-now, rank, got, want)
				}
			}
		}
	}
}

func TestPolicyDoesNotAllocate(t *testing.T) {
	const now = int64(1_700_000_000_000_000)
	for _, tc := range []struct {
		f      Family
		allocs float64 // of Policy; Condemned never allocates
	}{
		{Family{Name: "cf", MaxVersions: 3, TTL: time.Hour}, 0},
		{Family{Name: "cf", MaxVersions: 3, TTL: time.Hour, GC: GCIntersection}, 0},
		{Family{Name: "cf", GCRule: mustRule(t, "union(versions=3,intersection(age=7d,versions=1))")}, 0},
		{Family{Name: "cf", GCRule: mustRule(t, "intersection(union(age=1h,versions=2),union(versions=3,age=7d),age=30m)")}, 0},
		// Three steps: one slice.
		{Family{Name: "cf", GCRule: mustRule(t, "union(versions=3,intersection(age=7d,versions=1),age=30d)")}, 1},
	} {
		var p Policy
		if n := testing.AllocsPerRun(100, func() { p = tc.f.Policy(now) }); n != tc.allocs {
			t.Errorf("%s: Policy allocates %v times, want %v", tc.f.Spec(), n, tc.allocs)
		}
		if n := testing.AllocsPerRun(100, func() { p.Condemned(now-1, 2) }); n != 0 {
			t.Errorf("%s: Condemned allocates %v times", tc.f.Spec(), n)
		}
	}
}

// A staircase of more than the inline steps still evaluates right.
func TestPolicyWithManySteps(t *testing.T) {
	const now = int64(1_000_000_000_000)
	hour := time.Hour.Microseconds()
	r := mustRule(t, "union(age=10h,intersection(versions=1,age=8h),intersection(versions=2,age=6h),intersection(versions=3,age=4h),intersection(versions=4,age=2h),versions=5)")
	p := (&Family{Name: "cf", GCRule: r}).Policy(now)
	for rank := 0; rank < 7; rank++ {
		for h := int64(0); h <= 11; h++ {
			ts := now - h*hour - 1
			if got, want := p.Condemned(ts, rank), refCondemned(r, now, ts, rank); got != want {
				t.Errorf("Condemned(now-%dh-1, %d) = %v, want %v", h, rank, got, want)
			}
		}
	}
	if c, ok := p.ExpiredFileCutoff(); !ok || c != now-10*hour {
		t.Errorf("ExpiredFileCutoff = %d, %v; want now-10h", c-now, ok)
	}
}

func mustRule(t testing.TB, s string) *GCRule {
	t.Helper()
	r, err := ParseGCRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGCRuleValidate(t *testing.T) {
	deep := MaxVersionsRule(1)
	for range MaxGCRuleDepth {
		deep = UnionRule(deep)
	}
	cyclic := UnionRule()
	cyclic.Rules = append(cyclic.Rules, cyclic)
	wide := UnionRule()
	for range MaxGCRuleNodes {
		wide.Rules = append(wide.Rules, MaxVersionsRule(1))
	}
	tests := []struct {
		name    string
		f       Family
		wantErr string
	}{
		{"nested", Family{Name: "cf", GCRule: UnionRule(MaxVersionsRule(3), IntersectionRule(MaxAgeRule(time.Hour), MaxVersionsRule(1)))}, ""},
		{"empty union", Family{Name: "cf", GCRule: UnionRule()}, ""},
		{"zero versions", Family{Name: "cf", GCRule: MaxVersionsRule(0)}, "keep at least 1 version"},
		{"zero age", Family{Name: "cf", GCRule: UnionRule(MaxAgeRule(0))}, "age must be positive"},
		{"nanosecond age", Family{Name: "cf", GCRule: MaxAgeRule(time.Nanosecond)}, "whole number of microseconds"},
		{"nil child", Family{Name: "cf", GCRule: UnionRule(nil)}, "missing"},
		{"unknown kind", Family{Name: "cf", GCRule: &GCRule{}}, "kind 0 is unknown"},
		{"leaf with children", Family{Name: "cf", GCRule: &GCRule{Kind: RuleMaxVersions, MaxVersions: 1, Rules: []*GCRule{MaxVersionsRule(1)}}}, "a leaf has one value"},
		{"union with a value", Family{Name: "cf", GCRule: &GCRule{Kind: RuleUnion, MaxVersions: 1}}, "of its own"},
		{"too deep", Family{Name: "cf", GCRule: deep}, "deeper than 16"},
		{"too big", Family{Name: "cf", GCRule: wide}, "more than 64 rules"},
		{"cycle", Family{Name: "cf", MaxVersions: 1, GCRule: cyclic}, "deeper than 16"},
		{"both forms", Family{Name: "cf", MaxVersions: 1, GCRule: MaxVersionsRule(1)}, "use one"},
		{"both forms gc", Family{Name: "cf", GC: GCIntersection, GCRule: MaxVersionsRule(1)}, "use one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want cell.ErrInvalid containing %q", err, tc.wantErr)
			}
			if strings.Count(err.Error(), cell.ErrInvalid.Error()) != 1 {
				t.Errorf("error %q repeats %q", err, cell.ErrInvalid)
			}
		})
	}
}

func TestEffectiveGCRule(t *testing.T) {
	for _, tc := range []struct {
		f    Family
		want string
	}{
		{Family{Name: "cf"}, ""},
		{Family{Name: "cf", MaxVersions: 2}, "versions=2"},
		{Family{Name: "cf", TTL: 48 * time.Hour}, "age=2d"},
		{Family{Name: "cf", MaxVersions: 2, TTL: time.Hour}, "union(versions=2,age=1h)"},
		{Family{Name: "cf", MaxVersions: 2, TTL: time.Hour, GC: GCIntersection}, "intersection(versions=2,age=1h)"},
		{Family{Name: "cf", GCRule: UnionRule()}, "union()"},
	} {
		if got := tc.f.EffectiveGCRule().String(); got != tc.want {
			t.Errorf("%s: EffectiveGCRule = %q, want %q", tc.f.Spec(), got, tc.want)
		}
	}
}

func TestFamilyEqual(t *testing.T) {
	a := Family{Name: "cf", GCRule: mustRule(t, "union(versions=1,age=1h)")}
	b := Family{Name: "cf", GCRule: mustRule(t, "union(versions=1,age=1h)")}
	c := Family{Name: "cf", GCRule: mustRule(t, "union(versions=1,age=2h)")}
	if !a.Equal(b) || a.Equal(c) || a.Equal(Family{Name: "cf"}) || !(Family{Name: "x"}).Equal(Family{Name: "x"}) {
		t.Error("Equal is wrong")
	}
	d := b
	d.InMemory = true
	if a.Equal(d) {
		t.Error("Equal ignores other fields")
	}
}
