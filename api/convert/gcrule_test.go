package convert

import (
	"math/rand"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/families"
)

func randRule(rng *rand.Rand, depth int) *families.GCRule {
	k := rng.Intn(4)
	if depth <= 1 {
		k = rng.Intn(2)
	}
	switch k {
	case 0:
		return families.MaxVersionsRule(1 + rng.Intn(1<<20))
	case 1:
		return families.MaxAgeRule(time.Duration(1+rng.Int63n(1<<50)) * time.Microsecond)
	}
	r := &families.GCRule{Kind: families.RuleUnion}
	if k == 3 {
		r.Kind = families.RuleIntersection
	}
	for n := rng.Intn(4); n > 0; n-- {
		r.Rules = append(r.Rules, randRule(rng, depth-1))
	}
	return r
}

// Random nested rules survive Go -> proto -> wire -> proto -> Go.
func TestGCRuleRoundTripsOverTheWire(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for range 500 {
		f := families.Family{Name: "cf", GCRule: randRule(rng, 1+rng.Intn(4))}
		b, err := proto.Marshal(FamilyToProto(f))
		if err != nil {
			t.Fatal(err)
		}
		var p tabulapb.Family
		if err := proto.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		back, err := FamilyFromProto(&p)
		if err != nil || !back.Equal(f) {
			t.Fatalf("seed %d: %s came back as %s, %v", seed, f.GCRule, back.GCRule, err)
		}
	}
}
