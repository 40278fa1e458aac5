package rowfilter

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// randomFilter builds a filter tree of at most depth levels whose fields
// are exactly those its kind uses, with byte strings of any bytes
// (binary, quotes, backslashes, UTF-8), nil and empty bounds, open and
// closed ends, and numbers of any sign.
func randomFilter(r *rand.Rand, depth int) *Filter {
	k := Kind(1 + r.IntN(int(kindCount)-1))
	if depth <= 1 {
		for k == KindChain || k == KindInterleave || k == KindCondition {
			k = Kind(1 + r.IntN(int(kindCount)-1))
		}
	}
	f := &Filter{Kind: k}
	switch k {
	case KindChain, KindInterleave:
		for range r.IntN(4) {
			f.Filters = append(f.Filters, randomFilter(r, depth-1))
		}
	case KindCondition:
		branch := func() *Filter {
			if r.IntN(4) == 0 {
				return nil
			}
			return randomFilter(r, depth-1)
		}
		f.Predicate, f.True, f.False = branch(), branch(), branch()
	case KindRowKeyRegex, KindFamilyRegex, KindQualifierRegex, KindValueRegex:
		f.Regex = string(randomBytes(r))
	case KindRowKeyPrefix:
		f.Prefix = randomBytes(r)
	case KindFamily:
		f.Family = string(randomBytes(r))
	case KindQualifierRange, KindValueRange:
		if k == KindQualifierRange {
			f.Family = string(randomBytes(r))
		}
		if r.IntN(3) > 0 {
			f.Start = randomBytes(r)
		}
		if r.IntN(3) > 0 {
			f.End = randomBytes(r)
		}
		f.StartOpen, f.EndOpen = r.IntN(2) == 0, r.IntN(2) == 0
	case KindTimestampRange:
		f.TimeStart, f.TimeEnd = randomInt(r), randomInt(r)
	case KindCellsPerRowLimit, KindCellsPerRowOffset, KindCellsPerColumnLimit:
		f.N = int(randomInt(r))
	case KindLabel:
		f.Label = string(randomBytes(r))
	case KindRowSample:
		switch r.IntN(4) {
		case 0:
			f.Probability = r.Float64()
		case 1:
			f.Probability = math.Float64frombits(r.Uint64())
			if math.IsNaN(f.Probability) || math.IsInf(f.Probability, 0) {
				f.Probability = 0.5
			}
		case 2:
			f.Probability = -r.Float64() * 1e-300
		default:
			f.Probability = float64(r.IntN(3))
		}
	}
	return f
}

// randomBytes is an empty, ASCII, UTF-8 or binary byte string, non-nil.
func randomBytes(r *rand.Rand) []byte {
	b := []byte{}
	for range r.IntN(12) {
		switch r.IntN(6) {
		case 0:
			b = append(b, byte(r.IntN(256)))
		case 1:
			b = append(b, ("\"\\`,()[] ")[r.IntN(9)])
		case 2:
			b = append(b, "é€\u00ad\U0001F600"[r.IntN(4)*2:][:2]...) // also cut runes
		default:
			b = append(b, byte('a'+r.IntN(26)))
		}
	}
	return b
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return int64(r.Uint64())
	case 1:
		return -int64(r.IntN(1000))
	default:
		return int64(r.IntN(5000))
	}
}

// normalized maps a nil Prefix to the empty one: the language writes both
// as "" (they mean the same), every other nil-or-empty difference it keeps.
func normalized(f *Filter) *Filter {
	if f == nil {
		return nil
	}
	g := *f
	if g.Kind == KindRowKeyPrefix && g.Prefix == nil {
		g.Prefix = []byte{}
	}
	g.Filters = nil
	for _, c := range f.Filters {
		g.Filters = append(g.Filters, normalized(c))
	}
	g.Predicate, g.True, g.False = normalized(f.Predicate), normalized(f.True), normalized(f.False)
	return &g
}

// TestParseRoundTripsRandomFilters: for random filters of every kind,
// Parse(f.String()) is f, field for field.
func TestParseRoundTripsRandomFilters(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	seen := map[Kind]bool{}
	for i := 0; i < 20000; i++ {
		f := randomFilter(r, 1+r.IntN(5))
		seen[f.Kind] = true
		s := f.String()
		g, err := Parse(s)
		if err != nil {
			t.Fatalf("seed %d: Parse(%s): %v", seed, s, err)
		}
		if want := normalized(f); !reflect.DeepEqual(g, want) {
			t.Fatalf("seed %d: Parse(%s)\n got  %#v\n want %#v", seed, s, g, want)
		}
	}
	for k := KindPass; k < kindCount; k++ {
		if !seen[k] {
			t.Errorf("no %s filter was generated at the root", k)
		}
	}
}

// TestParseExamples: what users type, with its canonical form.
func TestParseExamples(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`pass()`, `pass()`},
		{" chain ( family( \"cf\" ) ,\n cells_per_column_limit(1) ) ", `chain(family("cf"), cells_per_column_limit(1))`},
		{`chain()`, `chain()`},
		{`interleave(block(), sink(), strip_value())`, `interleave(block(), sink(), strip_value())`},
		{`condition(value_regex("err.*"), apply_label_transformer("bad"))`, `condition(value_regex("err.*"), apply_label_transformer("bad"), nil)`},
		{`condition(nil, nil, pass())`, `condition(nil, nil, pass())`},
		{"row_key_regex(`user\\d+`)", `row_key_regex("user\\d+")`},
		{`row_key_prefix("\xff\x01")`, `row_key_prefix("\xff\x01")`},
		{"row_key_prefix(\"\xff\")", `row_key_prefix("\xff")`}, // a raw byte stands for itself
		{`row_key_prefix("\u00e9\101\n")`, `row_key_prefix("éA\n")`},
		{`family_regex("c.*")`, `family_regex("c.*")`},
		{`qualifier_regex("a|b")`, `qualifier_regex("a|b")`},
		{`qualifier_range("cf", ["a", "m"))`, `qualifier_range("cf", ["a", "m"))`},
		{`qualifier_range("", (, ])`, `qualifier_range("", (, ])`},
		{`value_range(["", ))`, `value_range(["", ))`},
		{`value_range(("10","20"])`, `value_range(("10", "20"])`},
		{`timestamp_range(1000, 0)`, `timestamp_range(1000, 0)`},
		{`timestamp_range("2026-12-06T19:00:00Z", "2026-12-06T20:00:00.000001+01:00")`, `timestamp_range(1796583600000000, 1796583600000001)`},
		{`cells_per_row_limit(2)`, `cells_per_row_limit(2)`},
		{`cells_per_row_offset(0)`, `cells_per_row_offset(0)`},
		{`cells_per_column_limit(-1)`, `cells_per_column_limit(-1)`}, // Compile rejects it, Parse does not
		{`row_sample(0.25)`, `row_sample(0.25)`},
		{`row_sample(1e-5)`, `row_sample(1e-05)`},
	} {
		f, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%s): %v", c.in, err)
			continue
		}
		if got := f.String(); got != c.want {
			t.Errorf("Parse(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestParseErrorsNameThePositionAndWhatWasExpected: each error says at
// which byte (1-based) and what the parser expected there.
func TestParseErrorsNameThePositionAndWhatWasExpected(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, `at 1: expected a filter (such as chain(...), family("cf") or pass()), found the end of the input`},
		{`famly("cf")`, `at 1: unknown filter "famly"; the filters are pass, block, chain, interleave, condition, row_key_regex, row_key_prefix, family_regex, family, qualifier_regex, qualifier_range, timestamp_range, value_regex, value_range, cells_per_row_limit, cells_per_row_offset, cells_per_column_limit, strip_value, sink, apply_label_transformer, row_sample`},
		{`chain(family("cf") pass())`, `at 20: expected ')' after the filters of chain (separate them with ','), found 'pass'`},
		{`family(cf)`, `at 8: expected a string ("...") for the family name of family, found 'cf'`},
		{`family("cf`, `at 8: string has no closing "`},
		{`value_regex("a\d")`, `at 15: bad escape \d in a string; write \\ for a backslash (a regex's \d is "\\d", or use a ` + "`raw string`)"},
		{`pass`, `at 5: expected '(' after pass, found the end of the input`},
		{`pass(1)`, `at 6: expected ')' after pass (it takes no arguments), found '1'`},
		{`pass() block()`, `at 8: unexpected 'block' after the filter; join filters with chain(...) or interleave(...)`},
		{`chain(nil)`, `at 7: nil is only a condition's missing branch; use pass() or block() here`},
		{`condition(pass())`, `at 17: expected ',' after a condition's predicate (condition(PREDICATE, TRUE, FALSE)), found ')'`},
		{`value_range("a", "b")`, `at 13: expected '[' or '(' to start the range of value_range (as in ["a", "b")), found a string`},
		{`value_range(["a" "b"))`, `at 18: expected ',' between the bounds of the range of value_range (leave a bound out for none: ["a", )), found a string`},
		{`value_range(["a", "b"}`, `at 22: expected ']' or ')' to end the range of value_range, found '}'`},
		{`cells_per_row_limit(x)`, `at 21: expected a number for the count of cells_per_row_limit, found 'x'`},
		{`cells_per_row_limit(1.5)`, `at 21: the count of cells_per_row_limit is "1.5": not an integer`},
		{`row_sample(0.5.5)`, `at 12: the probability of row_sample is "0.5.5": not a number`},
		{`timestamp_range("yesterday", 0)`, `at 17: the start of timestamp_range: "yesterday" is neither microseconds since the Unix epoch nor an RFC 3339 time such as 2026-12-06T19:00:00Z`},
		{`timestamp_range("2026-12-06T19:00:00.0000001Z", 0)`, `at 17: the start of timestamp_range: "2026-12-06T19:00:00.0000001Z" is finer than a microsecond, the unit of timestamps`},
		{`timestamp_range(1 2)`, `at 19: expected ',' after the start of timestamp_range (timestamp_range(START, END)), found '2'`},
	} {
		_, err := Parse(c.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%s) = %v, want a *ParseError", c.in, err)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("Parse(%s):\n got  %s\n want %s", c.in, err, c.want)
		}
	}
}

// TestParseNestsUpToMaxDepth: MaxDepth levels parse (and compile); one
// more is an error at the filter that is too deep.
func TestParseNestsUpToMaxDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("chain(", n-1) + "pass()" + strings.Repeat(")", n-1) }
	f, err := Parse(nest(MaxDepth))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(f); err != nil {
		t.Fatal(err)
	}
	_, err = Parse(nest(MaxDepth + 1))
	if want := "at 385: filters nest more than 64 deep"; err == nil || err.Error() != want {
		t.Errorf("Parse of %d levels: %v, want %s", MaxDepth+1, err, want)
	}
}

// TestQuoteUnquoteRoundTripEveryByte: Unquote(Quote(b)) is b for every
// byte alone and for random byte strings; the CLI's "\xff\x01" is those
// two bytes.
func TestQuoteUnquoteRoundTripEveryByte(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	var cases [][]byte
	for c := range 256 {
		cases = append(cases, []byte{byte(c)})
	}
	for range 5000 {
		cases = append(cases, randomBytes(r))
	}
	for _, b := range cases {
		got, err := Unquote(Quote(b))
		if err != nil || string(got) != string(b) {
			t.Fatalf("seed %d: Unquote(Quote(%x)) = %x, %v", seed, b, got, err)
		}
	}
	if got, err := Unquote(`"\xff\x01"`); err != nil || string(got) != "\xff\x01" {
		t.Errorf(`Unquote("\xff\x01") = %q, %v`, got, err)
	}
	if _, err := Unquote(`"a"b`); err == nil || err.Error() != `at 4: unexpected "b" after the closing quote` {
		t.Errorf(`Unquote("a"b) = %v`, err)
	}
}

// TestDocsFilterExamplesParseAndCompile: every line of the ```filter
// blocks of docs/FILTERS.md parses, compiles, and prints as written.
func TestDocsFilterExamplesParseAndCompile(t *testing.T) {
	b, err := os.ReadFile("../docs/FILTERS.md")
	if err != nil {
		t.Fatal(err)
	}
	var in bool
	var n int
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "```filter":
			in = true
		case in && line == "```":
			in = false
		case in && line != "":
			n++
			expr, _, _ := strings.Cut(line, "  #") // a comment after two spaces
			f, err := Parse(expr)
			if err != nil {
				t.Errorf("docs/FILTERS.md:%d: %s: %v", i+1, expr, err)
				continue
			}
			if _, err := Compile(f); err != nil {
				t.Errorf("docs/FILTERS.md:%d: %s: %v", i+1, expr, err)
			}
		}
	}
	if n < 5 {
		t.Errorf("docs/FILTERS.md has %d filter examples in ```filter blocks, want at least 5", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`chain(family("cf"), qualifier_range("cf", ["a", "m")), cells_per_column_limit(1))`,
		`condition(value_regex("err.*"), apply_label_transformer("bad"), nil)`,
		"row_key_regex(`user\\d+`)",
		`interleave(row_key_prefix("\xff\x01"), value_range((, "\u00e9"]), sink())`,
		`timestamp_range("2026-12-06T19:00:00Z", 0)`,
		`row_sample(1e-05)`,
		`cells_per_row_offset(-3)`,
		`chain(strip_value(), pass(), block())`,
		`qualifier_range("", ["", ))`,
		`family_regex("c`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Pos < 1 || pe.Pos > len(s)+1 {
				t.Fatalf("Parse(%q): error %v is not a *ParseError within the input", s, err)
			}
			return
		}
		out := g.String()
		h, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) printed %s, which does not parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(normalized(h), normalized(g)) || h.String() != out {
			t.Fatalf("Parse(%q) = %s does not round-trip:\n got  %#v\n want %#v", s, out, h, g)
		}
		Compile(g) // must not panic, whatever it says
	})
}
