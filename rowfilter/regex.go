package rowfilter

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// maxRegexLen bounds a filter's pattern; the regexp package bounds the
// size of what it compiles.
const maxRegexLen = 32 << 10

// compileRegex compiles a filter pattern so that it must match the whole
// input. \C (RE2's "any byte") becomes "any character".
func compileRegex(pattern string) (*regexp.Regexp, error) {
	p := translateAnyByte(pattern)
	// Check the pattern alone first so that wrapping it cannot change its
	// meaning (as "a)|(b" would).
	if _, err := syntax.Parse(p, syntax.Perl); err != nil {
		return nil, err
	}
	return regexp.Compile(`\A(?:` + p + `)\z`)
}

// translateAnyByte rewrites \C outside character classes and \Q...\E
// quotes as (?s:.), which Go's RE2 dialect lacks. Go matches UTF-8, so it
// matches one character: a whole UTF-8 sequence, or one byte that is not
// valid UTF-8.
func translateAnyByte(p string) string {
	if !strings.Contains(p, `\C`) {
		return p
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			next := p[i+1]
			switch {
			case next == 'C' && !inClass:
				b.WriteString(`(?s:.)`)
				i++
			case next == 'Q' && !inClass:
				end := strings.Index(p[i+2:], `\E`)
				if end < 0 {
					b.WriteString(p[i:])
					return b.String()
				}
				b.WriteString(p[i : i+2+end+2])
				i += 2 + end + 1
			default:
				b.WriteByte(c)
				b.WriteByte(next)
				i++
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ']' first in the class (after an optional '^') is literal.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == '[' && inClass && strings.HasPrefix(p[i:], "[:"):
			end := strings.Index(p[i+2:], ":]")
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(p[i : i+2+end+2])
			i += 2 + end + 1
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// maxEnumerated bounds how many strings finiteMatches lists.
const maxEnumerated = 256

// finiteMatches returns a superset of the strings a (whole-string)
// pattern can match, when that set is small and finite: "cf", "cf1|cf2",
// "metrics_[a-c]". ok is false when it cannot say.
func finiteMatches(pattern string) (set map[string]bool, ok bool) {
	re, err := syntax.Parse(translateAnyByte(pattern), syntax.Perl)
	if err != nil {
		return nil, false
	}
	budget := maxEnumerateSteps
	list, ok := enumerate(re.Simplify(), &budget)
	if !ok {
		return nil, false
	}
	set = make(map[string]bool, len(list))
	for _, s := range list {
		set[s] = true
	}
	return set, true
}

// maxEnumerateSteps bounds the nodes enumerate visits: Simplify shares
// subtrees, so a walk of the tree can be far longer than the pattern.
const maxEnumerateSteps = 10000

func enumerate(re *syntax.Regexp, budget *int) ([]string, bool) {
	if *budget--; *budget < 0 {
		return nil, false
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return nil, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		// Assertions match the empty string or nothing: "" is a superset.
		return []string{""}, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxEnumerated {
				return nil, false
			}
		}
		out := make([]string, 0, n)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, string(r))
			}
		}
		return out, true
	case syntax.OpCapture:
		return enumerate(re.Sub[0], budget)
	case syntax.OpQuest:
		sub, ok := enumerate(re.Sub[0], budget)
		if !ok || len(sub)+1 > maxEnumerated {
			return nil, false
		}
		return append(sub, ""), true
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			sub, ok := enumerate(s, budget)
			if !ok || len(out)+len(sub) > maxEnumerated {
				return nil, false
			}
			out = append(out, sub...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, s := range re.Sub {
			sub, ok := enumerate(s, budget)
			if !ok || len(out)*len(sub) > maxEnumerated {
				return nil, false
			}
			next := make([]string, 0, len(out)*len(sub))
			for _, a := range out {
				for _, b := range sub {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}
