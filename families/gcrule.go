package families

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// GCRuleKind says what a GCRule node is.
type GCRuleKind uint8

const (
	// RuleMaxVersions condemns every version of a column beyond the newest
	// MaxVersions (by timestamp).
	RuleMaxVersions GCRuleKind = iota + 1
	// RuleMaxAge condemns cells whose timestamp is older than now - MaxAge.
	RuleMaxAge
	// RuleUnion condemns a cell when ANY of its Rules does. An empty union
	// condemns nothing.
	RuleUnion
	// RuleIntersection condemns a cell when EVERY one of its Rules does.
	// An empty intersection condemns nothing (not everything: a vacuous
	// "all" would delete the whole family, and the Cloud Bigtable emulator
	// keeps every cell under it too).
	RuleIntersection
)

// Bounds of a GCRule tree, so that compiling one (which every read of the
// family does) stays cheap. Cloud Bigtable users nest two or three levels.
const (
	// MaxGCRuleDepth is the deepest a rule tree may be; a lone leaf has
	// depth 1.
	MaxGCRuleDepth = 16
	// MaxGCRuleNodes is the most nodes (leaves and unions/intersections)
	// a rule tree may have.
	MaxGCRuleNodes = 64
)

// GCRule is a garbage-collection rule as Cloud Bigtable has it: a leaf
// (MaxVersions or MaxAge) or a union or intersection of rules, nested to
// any depth up to MaxGCRuleDepth. Build it with the constructors
// (MaxVersionsRule, MaxAgeRule, UnionRule, IntersectionRule) or as a
// literal. A rule set on a Family is shared by the copies of the Family:
// treat it as immutable and build a new tree to change it.
type GCRule struct {
	Kind GCRuleKind
	// MaxVersions, for RuleMaxVersions, is how many versions to keep,
	// >= 1.
	MaxVersions int
	// MaxAge, for RuleMaxAge, is the age past which a cell is condemned:
	// a positive whole number of microseconds.
	MaxAge time.Duration
	// Rules, for RuleUnion and RuleIntersection, are the combined rules.
	Rules []*GCRule
}

// MaxVersionsRule keeps the newest n versions of each column.
func MaxVersionsRule(n int) *GCRule { return &GCRule{Kind: RuleMaxVersions, MaxVersions: n} }

// MaxAgeRule condemns cells older than now - d.
func MaxAgeRule(d time.Duration) *GCRule { return &GCRule{Kind: RuleMaxAge, MaxAge: d} }

// UnionRule condemns what any of rules condemns.
func UnionRule(rules ...*GCRule) *GCRule { return &GCRule{Kind: RuleUnion, Rules: rules} }

// IntersectionRule condemns what every one of rules condemns.
func IntersectionRule(rules ...*GCRule) *GCRule {
	return &GCRule{Kind: RuleIntersection, Rules: rules}
}

// Validate checks the tree: known kinds, MaxVersions >= 1, MaxAge a
// positive whole number of microseconds, leaves without children and
// combinations without leaf values, and the depth and size bounds. Errors
// wrap cell.ErrInvalid.
func (r *GCRule) Validate() error {
	nodes := 0
	return r.validate(1, &nodes)
}

func (r *GCRule) validate(depth int, nodes *int) error {
	if r == nil {
		return cell.Invalidf("gc rule: a nested rule is missing (nil); give versions=N, age=D, union(...) or intersection(...)")
	}
	*nodes++
	if *nodes > MaxGCRuleNodes {
		return cell.Invalidf("gc rule has more than %d rules; merge rules (an intersection of ages is the largest age, a union of versions the smallest count)", MaxGCRuleNodes)
	}
	if depth > MaxGCRuleDepth {
		return cell.Invalidf("gc rule is nested deeper than %d levels; flatten unions of unions and intersections of intersections", MaxGCRuleDepth)
	}
	switch r.Kind {
	case RuleMaxVersions:
		if r.MaxVersions < 1 {
			return cell.Invalidf("gc rule versions=%d: keep at least 1 version (leave the rule out for no limit)", r.MaxVersions)
		}
		if r.MaxAge != 0 || len(r.Rules) != 0 {
			return cell.Invalidf("gc rule versions=%d also has an age or nested rules; a leaf has one value", r.MaxVersions)
		}
	case RuleMaxAge:
		if r.MaxAge <= 0 {
			return cell.Invalidf("gc rule age=%v: the age must be positive (leave the rule out for no age limit)", r.MaxAge)
		}
		if !wholeMicros(r.MaxAge) {
			return cell.Invalidf("gc rule age=%v is not a whole number of microseconds; timestamps are in microseconds", r.MaxAge)
		}
		if r.MaxVersions != 0 || len(r.Rules) != 0 {
			return cell.Invalidf("gc rule age=%v also has versions or nested rules; a leaf has one value", FormatDuration(r.MaxAge))
		}
	case RuleUnion, RuleIntersection:
		if r.MaxVersions != 0 || r.MaxAge != 0 {
			return cell.Invalidf("gc rule %s has versions or an age of its own; put them in nested rules", r.Kind)
		}
		for _, c := range r.Rules {
			if err := c.validate(depth+1, nodes); err != nil {
				return err
			}
		}
	default:
		return cell.Invalidf("gc rule kind %d is unknown; use versions, age, union or intersection", r.Kind)
	}
	return nil
}

var gcRuleKindNames = []string{"", "versions", "age", "union", "intersection"}

func (k GCRuleKind) String() string {
	if k > 0 && int(k) < len(gcRuleKindNames) {
		return gcRuleKindNames[k]
	}
	return fmt.Sprintf("gcrulekind(%d)", uint8(k))
}

// String returns the rule in the form the family spec's gc option takes:
// "versions=3", "age=7d", "union(versions=3,intersection(age=7d,versions=1))".
// ParseGCRule(r.String()) gives r back. A nil rule is "".
func (r *GCRule) String() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	r.format(&b)
	return b.String()
}

func (r *GCRule) format(b *strings.Builder) {
	if r == nil {
		b.WriteString("<nil>")
		return
	}
	switch r.Kind {
	case RuleMaxVersions:
		b.WriteString("versions=")
		b.WriteString(strconv.Itoa(r.MaxVersions))
	case RuleMaxAge:
		b.WriteString("age=")
		b.WriteString(FormatDuration(r.MaxAge))
	case RuleUnion, RuleIntersection:
		b.WriteString(r.Kind.String())
		b.WriteByte('(')
		for i, c := range r.Rules {
			if i > 0 {
				b.WriteByte(',')
			}
			c.format(b)
		}
		b.WriteByte(')')
	default:
		b.WriteString(r.Kind.String())
	}
}

// Equal reports whether r and o are the same tree (nil equals nil).
func (r *GCRule) Equal(o *GCRule) bool {
	if r == nil || o == nil {
		return r == o
	}
	if r.Kind != o.Kind || r.MaxVersions != o.MaxVersions || r.MaxAge != o.MaxAge || len(r.Rules) != len(o.Rules) {
		return false
	}
	for i := range r.Rules {
		if !r.Rules[i].Equal(o.Rules[i]) {
			return false
		}
	}
	return true
}

// EffectiveGCRule returns the rule the family's GC policy follows: GCRule
// when set, else the simple fields as a tree (versions and ttl combined by
// GC when both are set), or nil when no rule is set. It is how a gateway
// speaks the policy as one Cloud Bigtable GcRule.
func (f *Family) EffectiveGCRule() *GCRule {
	if f.GCRule != nil {
		return f.GCRule
	}
	var v, a *GCRule
	if f.MaxVersions > 0 {
		v = MaxVersionsRule(f.MaxVersions)
	}
	if f.TTL > 0 {
		a = MaxAgeRule(f.TTL)
	}
	switch {
	case v != nil && a != nil:
		if f.GC == GCIntersection {
			return IntersectionRule(v, a)
		}
		return UnionRule(v, a)
	case v != nil:
		return v
	case a != nil:
		return a
	}
	return nil
}

// Equal reports whether f and g are the same family, comparing their GC
// rule trees by value (== compares the GCRule pointers).
func (f Family) Equal(g Family) bool {
	fr, gr := f.GCRule, g.GCRule
	f.GCRule, g.GCRule = nil, nil
	return f == g && fr.Equal(gr)
}
