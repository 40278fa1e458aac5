package rowfilter

import (
	"maps"
	"slices"
	"testing"
)

func TestRegexMatchesWholeString(t *testing.T) {
	tests := []struct {
		re      string
		in      string
		matches bool
	}{
		{"abc", "abc", true},
		{"abc", "xabc", false},
		{"abc", "abcx", false},
		{"a|b", "b", true},
		{"a|b", "ab", false},
		{"(?m)a$", "a\nb", false},
		{`\C`, "\xff", true},
		{`\C\C`, "\xff\x00", true},
		{`\C*`, "any\nthing\x00", true},
		{`\\C`, `\C`, true},
		{`\Q\C\E`, `\C`, true},
		{`[\]]\C`, "]x", true},
		{`[[:alpha:]]\C`, "a\n", true},
		{".", "\n", false},
		{"(?s).", "\n", true},
		{"", "", true},
		{"", "a", false},
	}
	for _, tc := range tests {
		re, err := compileRegex(tc.re)
		if err != nil {
			t.Errorf("compileRegex(%q): %v", tc.re, err)
			continue
		}
		if got := re.MatchString(tc.in); got != tc.matches {
			t.Errorf("%q matches %q = %v, want %v", tc.re, tc.in, got, tc.matches)
		}
	}
}

func TestFiniteMatches(t *testing.T) {
	tests := []struct {
		re   string
		want []string // nil: not finite
	}{
		{"cf", []string{"cf"}},
		{"cf1|cf2", []string{"cf1", "cf2"}},
		{"(a|b)(x|y)", []string{"ax", "ay", "bx", "by"}},
		{"metrics_[a-c]", []string{"metrics_a", "metrics_b", "metrics_c"}},
		{"cf2?", []string{"cf", "cf2"}},
		{"^cf$", []string{"cf"}},
		{"a{2,3}", []string{"aa", "aaa"}},
		{"cf.*", nil},
		{"cf+", nil},
		{"(?i)cf", nil},
		{"[^a]", nil},
		{`\C`, nil},
		{"[a-z][a-z]", nil}, // 676 > maxEnumerated
		{"a(", nil},
	}
	for _, tc := range tests {
		got, ok := finiteMatches(tc.re)
		if tc.want == nil {
			if ok {
				t.Errorf("finiteMatches(%q) = %v, want not finite", tc.re, got)
			}
			continue
		}
		keys := slices.Sorted(maps.Keys(got))
		if !ok || !slices.Equal(keys, tc.want) {
			t.Errorf("finiteMatches(%q) = %v, %v; want %v", tc.re, keys, ok, tc.want)
		}
	}
}

func FuzzCompileRegex(f *testing.F) {
	for _, s := range []string{"abc", `\C+`, `[\]]\C`, `\Q\C`, `[[:alpha:]\C]`, `a)|(b`, `(?s).*`, `a{2,3}|b?`, "[", `\`} {
		f.Add(s, []byte("abc\n\xff"))
	}
	f.Fuzz(func(t *testing.T, pattern string, input []byte) {
		for _, kind := range []Kind{KindRowKeyRegex, KindFamilyRegex, KindQualifierRegex, KindValueRegex} {
			c, err := Compile(&Filter{Kind: kind, Regex: pattern})
			if err != nil {
				continue
			}
			row := append([]byte("r"), input...)
			cells := []cellT{{Row: row, Family: string(input), Qualifier: input, Timestamp: 1, Value: input}}
			c.Apply(row, cells)
			c.RowMayMatch(row)
			if names, ok := c.Families(); ok && kind == KindFamilyRegex {
				// A finite set must contain every name the regex matches.
				if c.root.re.MatchString(string(input)) && validFamily(string(input)) && !names[string(input)] {
					t.Fatalf("Families() of %q = %v misses %q", pattern, names, input)
				}
			}
		}
	})
}
