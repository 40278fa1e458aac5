package rowfilter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The filter language (grammar in docs/FILTERS.md "The filter language")
// writes a Filter as calls named by its Kind, one to one:
//
//	chain(family("cf"), qualifier_range("cf", ["a", "m")), cells_per_column_limit(1))
//	condition(value_regex("err.*"), apply_label_transformer("bad"), nil)
//
// String prints it and Parse reads it: Parse(f.String()) gives f back.

// ParseError is a filter expression that does not parse. Pos is the
// 1-based byte offset in the expression where it went wrong.
type ParseError struct {
	Pos int
	Msg string
}

func (e *ParseError) Error() string { return fmt.Sprintf("at %d: %s", e.Pos, e.Msg) }

// kindByName maps a filter's name in the language (Kind.String) to its
// kind.
var kindByName = func() map[string]Kind {
	m := make(map[string]Kind, kindCount)
	for k := KindPass; k < kindCount; k++ {
		m[k.String()] = k
	}
	return m
}()

// Parse parses a filter expression of the filter language. It checks the
// syntax only (and nesting up to MaxDepth); Compile checks the rest
// (regexes, labels, limits). Errors are *ParseError, e.g.
// "at 14: expected ')' after the filters of chain, found 'family'".
func Parse(expr string) (*Filter, error) {
	p := &parser{s: expr}
	p.space()
	f, err := p.filter(1)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errorf("unexpected %s after the filter; join filters with chain(...) or interleave(...)", p.found())
	}
	return f, nil
}

// parser reads one expression; i is the byte offset of the next token.
type parser struct {
	s string
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return &ParseError{Pos: p.i + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// found describes the token at p.i for messages.
func (p *parser) found() string {
	if p.i >= len(p.s) {
		return "the end of the input"
	}
	switch c := p.s[p.i]; {
	case c == '"' || c == '`':
		return "a string"
	case isNameByte(c) || isNumberByte(c):
		j := p.i
		for j < len(p.s) && j-p.i < 40 && (isNameByte(p.s[j]) || isNumberByte(p.s[j])) {
			j++
		}
		return "'" + p.s[p.i:j] + "'"
	default:
		return strconv.QuoteRune(rune(c))
	}
}

// peek reports whether the next byte is c (after spaces).
func (p *parser) peek(c byte) bool {
	p.space()
	return p.i < len(p.s) && p.s[p.i] == c
}

// expect consumes c, or fails saying where it was expected.
func (p *parser) expect(c byte, where string) error {
	if !p.peek(c) {
		return p.errorf("expected '%c' %s, found %s", c, where, p.found())
	}
	p.i++
	return nil
}

func isNameByte(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// name reads a filter name (letters, digits and '_', starting with a
// letter or '_').
func (p *parser) name() string {
	p.space()
	j := p.i
	for j < len(p.s) && (isNameByte(p.s[j]) || j > p.i && '0' <= p.s[j] && p.s[j] <= '9') {
		j++
	}
	n := p.s[p.i:j]
	p.i = j
	return n
}

// filter parses one filter at nesting depth depth (the root is 1).
// orNil allows the word nil (a condition's missing branch).
func (p *parser) filter(depth int) (*Filter, error) {
	return p.filterOrNil(depth, false)
}

func (p *parser) filterOrNil(depth int, orNil bool) (*Filter, error) {
	p.space()
	start := p.i
	name := p.name()
	if name == "" {
		return nil, p.errorf("expected a filter (such as chain(...), family(\"cf\") or pass()), found %s", p.found())
	}
	if name == "nil" {
		if orNil {
			return nil, nil
		}
		p.i = start
		return nil, p.errorf("nil is only a condition's missing branch; use pass() or block() here")
	}
	k, ok := kindByName[name]
	if !ok {
		p.i = start
		return nil, p.errorf("unknown filter %q; the filters are %s", name, filterNames())
	}
	if depth > MaxDepth {
		p.i = start
		return nil, p.errorf("filters nest more than %d deep", MaxDepth)
	}
	if err := p.expect('(', "after "+name); err != nil {
		return nil, err
	}
	f := &Filter{Kind: k}
	if err := p.args(f, depth); err != nil {
		return nil, err
	}
	what := "the argument of " + name
	switch k {
	case KindPass, KindBlock, KindStripValue, KindSink:
		what = name + " (it takes no arguments)"
	case KindChain, KindInterleave:
		what = "the filters of " + name + " (separate them with ',')"
	case KindCondition:
		what = "condition(PREDICATE, TRUE, FALSE)"
	case KindQualifierRange, KindTimestampRange:
		what = "the arguments of " + name
	}
	if err := p.expect(')', "after "+what); err != nil {
		return nil, err
	}
	return f, nil
}

// args parses the arguments of f's kind, up to the closing ')'.
func (p *parser) args(f *Filter, depth int) (err error) {
	name := f.Kind.String()
	switch f.Kind {
	case KindChain, KindInterleave:
		if p.peek(')') {
			return nil
		}
		for {
			c, err := p.filter(depth + 1)
			if err != nil {
				return err
			}
			f.Filters = append(f.Filters, c)
			if !p.peek(',') {
				return nil
			}
			p.i++
		}
	case KindCondition:
		if f.Predicate, err = p.filterOrNil(depth+1, true); err != nil {
			return err
		}
		if err := p.expect(',', "after a condition's predicate (condition(PREDICATE, TRUE, FALSE))"); err != nil {
			return err
		}
		if f.True, err = p.filterOrNil(depth+1, true); err != nil {
			return err
		}
		if p.peek(',') { // the false branch may be left out: nil
			p.i++
			f.False, err = p.filterOrNil(depth+1, true)
		}
		return err
	case KindRowKeyRegex, KindFamilyRegex, KindQualifierRegex, KindValueRegex:
		b, err := p.str("the pattern of " + name)
		f.Regex = string(b)
		return err
	case KindRowKeyPrefix:
		f.Prefix, err = p.str("the prefix of " + name)
		return err
	case KindFamily:
		b, err := p.str("the family name of " + name)
		f.Family = string(b)
		return err
	case KindQualifierRange:
		b, err := p.str(`the family of qualifier_range (qualifier_range("cf", ["a", "b")))`)
		if err != nil {
			return err
		}
		f.Family = string(b)
		if err := p.expect(',', "after the family of qualifier_range"); err != nil {
			return err
		}
		return p.rng(f)
	case KindValueRange:
		return p.rng(f)
	case KindTimestampRange:
		if f.TimeStart, err = p.time("the start of timestamp_range"); err != nil {
			return err
		}
		if err := p.expect(',', "after the start of timestamp_range (timestamp_range(START, END))"); err != nil {
			return err
		}
		f.TimeEnd, err = p.time("the end of timestamp_range")
		return err
	case KindCellsPerRowLimit, KindCellsPerRowOffset, KindCellsPerColumnLimit:
		f.N, err = p.int("the count of " + name)
		return err
	case KindLabel:
		b, err := p.str("the label of " + name)
		f.Label = string(b)
		return err
	case KindRowSample:
		f.Probability, err = p.float("the probability of " + name)
		return err
	}
	return nil // pass, block, strip_value, sink take none
}

// str parses a string literal (see unquotePrefix).
func (p *parser) str(what string) ([]byte, error) {
	p.space()
	if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '`') {
		return nil, p.errorf("expected a string (\"...\") for %s, found %s", what, p.found())
	}
	b, n, err := unquotePrefix(p.s[p.i:])
	if err != nil {
		e := err.(*ParseError)
		return nil, &ParseError{Pos: p.i + e.Pos, Msg: e.Msg}
	}
	p.i += n
	return b, nil
}

// rng parses a range in interval notation: ( "[" | "(" ) [string] ","
// [string] ( "]" | ")" ); a left-out bound is nil.
func (p *parser) rng(f *Filter) (err error) {
	name := f.Kind.String()
	switch {
	case p.peek('['):
	case p.peek('('):
		f.StartOpen = true
	default:
		return p.errorf("expected '[' or '(' to start the range of %s (as in [\"a\", \"b\")), found %s", name, p.found())
	}
	p.i++
	if !p.peek(',') {
		if f.Start, err = p.str("the start of the range of " + name); err != nil {
			return err
		}
	}
	if err := p.expect(',', "between the bounds of the range of "+name+` (leave a bound out for none: ["a", ))`); err != nil {
		return err
	}
	if !p.peek(']') && !p.peek(')') {
		if f.End, err = p.str("the end of the range of " + name); err != nil {
			return err
		}
	}
	switch {
	case p.peek(']'):
	case p.peek(')'):
		f.EndOpen = true
	default:
		return p.errorf("expected ']' or ')' to end the range of %s, found %s", name, p.found())
	}
	p.i++
	return nil
}

// number reads a number token.
func (p *parser) number(what string) (string, error) {
	p.space()
	j := p.i
	for j < len(p.s) && isNumberByte(p.s[j]) {
		j++
	}
	if j == p.i {
		return "", p.errorf("expected a number for %s, found %s", what, p.found())
	}
	return p.s[p.i:j], nil
}

func (p *parser) int(what string) (int, error) {
	tok, err := p.number(what)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(tok, 10, strconv.IntSize)
	if err != nil {
		return 0, p.errorf("%s is %q: not an integer", what, tok)
	}
	p.i += len(tok)
	return int(n), nil
}

func (p *parser) float(what string) (float64, error) {
	tok, err := p.number(what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return 0, p.errorf("%s is %q: not a number", what, tok)
	}
	p.i += len(tok)
	return v, nil
}

// time parses a timestamp: microseconds since the Unix epoch, or an RFC
// 3339 time in a string ("2026-12-06T19:00:00Z").
func (p *parser) time(what string) (int64, error) {
	if !p.peek('"') && !p.peek('`') {
		tok, err := p.number(what + " (microseconds, or an RFC 3339 time in quotes)")
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return 0, p.errorf("%s is %q: not microseconds (an integer)", what, tok)
		}
		p.i += len(tok)
		return n, nil
	}
	at := p.i
	b, err := p.str(what)
	if err != nil {
		return 0, err
	}
	us, err := ParseTime(string(b))
	if err != nil {
		return 0, &ParseError{Pos: at + 1, Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	return us, nil
}

// ParseTime parses a timestamp as the filter language and the tabula CLI
// take it: microseconds since the Unix epoch, or an RFC 3339 time
// (2026-12-06T19:00:00Z, 2026-12-06T20:00:00.000001+01:00) at or after the
// epoch and with no digits finer than a microsecond.
func ParseTime(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%d is negative; timestamps are microseconds since the Unix epoch", n)
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither microseconds since the Unix epoch nor an RFC 3339 time such as 2026-12-06T19:00:00Z", s)
	}
	if t.Nanosecond()%1000 != 0 {
		return 0, fmt.Errorf("%q is finer than a microsecond, the unit of timestamps", s)
	}
	if t.Before(time.Unix(0, 0)) {
		return 0, fmt.Errorf("%q is before the Unix epoch; timestamps are microseconds since 1970-01-01T00:00:00Z", s)
	}
	return t.UnixMicro(), nil
}

// FormatTime prints a timestamp (microseconds since the Unix epoch) as
// an RFC 3339 time in UTC with as many fraction digits as it needs, which
// ParseTime reads back.
func FormatTime(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.999999Z07:00")
}

func filterNames() string {
	names := make([]string, 0, kindCount)
	for k := KindPass; k < kindCount; k++ {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}
