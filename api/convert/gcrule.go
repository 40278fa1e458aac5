package convert

import (
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// GCRuleFromProto converts a nested GC rule; nil gives nil (no nested
// rule). It stops at families.MaxGCRuleDepth and MaxGCRuleNodes, so a
// hostile message cannot make it recurse deeply, and leaves the rest of
// the validation to families.GCRule.Validate (which FamilyFromProto
// runs). A rule with none of its oneof set is an error: leave gc_rule
// unset for no nested rule. Errors wrap cell.ErrInvalid.
func GCRuleFromProto(p *tabulapb.GCRule) (*families.GCRule, error) {
	if p == nil {
		return nil, nil
	}
	nodes := 0
	return gcRuleFromProto(p, 1, &nodes)
}

func gcRuleFromProto(p *tabulapb.GCRule, depth int, nodes *int) (*families.GCRule, error) {
	if *nodes++; *nodes > families.MaxGCRuleNodes {
		return nil, cell.Invalidf("gc_rule has more than %d rules", families.MaxGCRuleNodes)
	}
	if depth > families.MaxGCRuleDepth {
		return nil, cell.Invalidf("gc_rule is nested deeper than %d levels", families.MaxGCRuleDepth)
	}
	switch r := p.GetRule().(type) {
	case *tabulapb.GCRule_MaxNumVersions:
		return families.MaxVersionsRule(int(r.MaxNumVersions)), nil
	case *tabulapb.GCRule_MaxAgeMicros:
		if r.MaxAgeMicros < 0 || r.MaxAgeMicros > maxTTLMicros {
			return nil, cell.Invalidf("gc_rule max_age_micros %d is out of range 1..%d", r.MaxAgeMicros, maxTTLMicros)
		}
		return families.MaxAgeRule(time.Duration(r.MaxAgeMicros) * time.Microsecond), nil
	case *tabulapb.GCRule_Intersection:
		return gcRulesFromProto(families.RuleIntersection, r.Intersection.GetRules(), depth, nodes)
	case *tabulapb.GCRule_Union:
		return gcRulesFromProto(families.RuleUnion, r.Union.GetRules(), depth, nodes)
	}
	return nil, cell.Invalidf("gc_rule has no rule set; give max_num_versions, max_age_micros, intersection or union, or leave gc_rule unset")
}

func gcRulesFromProto(kind families.GCRuleKind, ps []*tabulapb.GCRule, depth int, nodes *int) (*families.GCRule, error) {
	r := &families.GCRule{Kind: kind}
	if len(ps) > 0 {
		r.Rules = make([]*families.GCRule, 0, min(len(ps), families.MaxGCRuleNodes))
	}
	for _, c := range ps {
		cr, err := gcRuleFromProto(c, depth+1, nodes)
		if err != nil {
			return nil, err
		}
		r.Rules = append(r.Rules, cr)
	}
	return r, nil
}

// GCRuleToProto converts a nested GC rule; nil gives nil. MaxVersions
// saturates at the int32 limit and an age is rounded down to whole
// microseconds (Validate rejects rules that would need either).
func GCRuleToProto(r *families.GCRule) *tabulapb.GCRule {
	if r == nil {
		return nil
	}
	switch r.Kind {
	case families.RuleMaxVersions:
		return &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxNumVersions{MaxNumVersions: saturate32(r.MaxVersions)}}
	case families.RuleMaxAge:
		return &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxAgeMicros{MaxAgeMicros: r.MaxAge.Microseconds()}}
	case families.RuleIntersection:
		return &tabulapb.GCRule{Rule: &tabulapb.GCRule_Intersection{Intersection: gcRulesToProto(r.Rules)}}
	case families.RuleUnion:
		return &tabulapb.GCRule{Rule: &tabulapb.GCRule_Union{Union: gcRulesToProto(r.Rules)}}
	}
	return &tabulapb.GCRule{} // an unknown kind; FromProto rejects it
}

func gcRulesToProto(rs []*families.GCRule) *tabulapb.GCRule_Rules {
	out := &tabulapb.GCRule_Rules{Rules: make([]*tabulapb.GCRule, len(rs))}
	for i, r := range rs {
		out.Rules[i] = GCRuleToProto(r)
	}
	return out
}
