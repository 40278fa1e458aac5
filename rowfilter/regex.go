package rowfilter

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// maxRegexLen bounds a filter's pattern; the regexp package bounds the
// size of what it compiles.
const maxRegexLen = 32 << 10

// byteRegexp matches as RE2 in Latin-1 mode, as Bigtable does: every byte
// of the pattern and of the input is one character (U+0000 to U+00FF), so
// "." and \C match exactly one byte, and [^a] one byte that is not 'a'.
// Go's regexp matches UTF-8, so both sides are decoded from Latin-1 to
// UTF-8 first; input that is all ASCII (the usual case) is the same in
// both and is matched as it is.
type byteRegexp struct{ re *regexp.Regexp }

// Match reports whether the pattern matches all of v.
func (b *byteRegexp) Match(v []byte) bool {
	for _, c := range v {
		if c >= utf8.RuneSelf {
			return b.re.Match(latin1ToUTF8(v))
		}
	}
	return b.re.Match(v)
}

// MatchString is Match for a string.
func (b *byteRegexp) MatchString(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] >= utf8.RuneSelf {
			return b.re.Match(latin1ToUTF8([]byte(v)))
		}
	}
	return b.re.MatchString(v)
}

// latin1ToUTF8 decodes b as Latin-1: each byte becomes the rune of the same
// number.
func latin1ToUTF8(b []byte) []byte {
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return out
}

// compileRegex compiles a filter pattern (Latin-1, like its input) so that
// it must match the whole input. \C (RE2's "any byte") becomes "any
// character", which in Latin-1 is any byte.
func compileRegex(pattern string) (*byteRegexp, error) {
	p := goPattern(pattern)
	// Check the pattern alone first so that wrapping it cannot change its
	// meaning (as "a)|(b" would).
	if _, err := syntax.Parse(p, syntax.Perl); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`\A(?:` + p + `)\z`)
	if err != nil {
		return nil, err
	}
	return &byteRegexp{re: re}, nil
}

// goPattern turns a Latin-1 RE2 pattern into the UTF-8 Go pattern that
// matches the Latin-1-decoded input the same way.
func goPattern(pattern string) string {
	return translateAnyByte(string(latin1ToUTF8([]byte(pattern))))
}

// translateAnyByte rewrites \C outside character classes and \Q...\E
// quotes as (?s:.), which Go's RE2 dialect lacks. It matches one
// character, which is one byte of the Latin-1-decoded input.
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
	re, err := syntax.Parse(goPattern(pattern), syntax.Perl)
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
		// Back from the Go pattern's UTF-8 to Latin-1 bytes; a rune past
		// U+00FF matches no Latin-1 input.
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xff {
				b = nil
				break
			}
			b = append(b, byte(r))
		}
		if b != nil {
			set[string(b)] = true
		}
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
