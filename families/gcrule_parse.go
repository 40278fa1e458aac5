package families

import (
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/cell"
)

// ParseGCRule parses the form GCRule.String prints, which the family
// spec's gc option takes:
//
//	RULE := versions=N | age=DURATION | union(RULES) | intersection(RULES)
//	RULES := empty | RULE[,RULE...]
//
// Keywords are case-insensitive, spaces around tokens are ignored, and
// DURATION is as for ttl ("90m", "36h", "7d"). The result is validated;
// errors wrap cell.ErrInvalid and say where the text went wrong.
func ParseGCRule(s string) (*GCRule, error) {
	p := ruleParser{s: s}
	r, err := p.rule(1)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, p.errorf("unexpected %q after the rule", p.s[p.pos:])
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// ruleParser is a recursive-descent parser over s; pos is the next byte.
type ruleParser struct {
	s     string
	pos   int
	nodes int
}

func (p *ruleParser) errorf(format string, args ...any) error {
	args = append(args, p.s, p.pos)
	return cell.Invalidf("gc rule: "+format+" (in %q at byte %d); write versions=N, age=DURATION, union(RULE,...) or intersection(RULE,...)", args...)
}

func (p *ruleParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// word reads a keyword: letters only.
func (p *ruleParser) word() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos] | 0x20 // lower case for letters
		if c < 'a' || c > 'z' {
			break
		}
		p.pos++
	}
	return strings.ToLower(p.s[start:p.pos])
}

// value reads a leaf's value: up to the next ',' or ')'.
func (p *ruleParser) value() string {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' && p.s[p.pos] != '(' {
		p.pos++
	}
	return strings.TrimSpace(p.s[start:p.pos])
}

func (p *ruleParser) rule(depth int) (*GCRule, error) {
	if depth > MaxGCRuleDepth {
		return nil, p.errorf("nested deeper than %d levels", MaxGCRuleDepth)
	}
	if p.nodes++; p.nodes > MaxGCRuleNodes {
		return nil, p.errorf("more than %d rules", MaxGCRuleNodes)
	}
	p.space()
	at := p.pos
	kw := p.word()
	p.space()
	switch kw {
	case "versions", "age":
		if p.pos >= len(p.s) || p.s[p.pos] != '=' {
			return nil, p.errorf("%s needs =VALUE", kw)
		}
		p.pos++
		val := p.value()
		if kw == "versions" {
			n, err := strconv.Atoi(val)
			if err != nil {
				return nil, p.errorf("versions=%q is not a whole number", val)
			}
			return MaxVersionsRule(n), nil
		}
		d, err := parseDuration(val)
		if err != nil {
			return nil, p.errorf("age=%q: %v", val, err)
		}
		return MaxAgeRule(d), nil
	case "union", "intersection":
		if p.pos >= len(p.s) || p.s[p.pos] != '(' {
			return nil, p.errorf("%s needs (RULE,...)", kw)
		}
		p.pos++
		r := &GCRule{Kind: RuleUnion}
		if kw == "intersection" {
			r.Kind = RuleIntersection
		}
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ')' {
			p.pos++
			return r, nil
		}
		for {
			c, err := p.rule(depth + 1)
			if err != nil {
				return nil, err
			}
			r.Rules = append(r.Rules, c)
			p.space()
			if p.pos >= len(p.s) {
				return nil, p.errorf("%s( is not closed", kw)
			}
			switch p.s[p.pos] {
			case ',':
				p.pos++
			case ')':
				p.pos++
				return r, nil
			default:
				return nil, p.errorf("expected ',' or ')'")
			}
		}
	}
	p.pos = at
	v := p.value()
	p.pos = at
	return nil, p.errorf("unknown rule %q", v)
}
