package main

import (
	"strings"
	"testing"
)

// TestCLIReadFlags runs get and scan with each read flag against the dev
// cluster: --time-range, --time-format, --value-range, --keys-only,
// --cells-per-row, --limit, --filter (alone and chained with the other
// flags), --hex, and keys typed as the output prints them.
func TestCLIReadFlags(t *testing.T) {
	ok(t, "table", "create", "reads", "--family", "a", "--family", "b")
	waitTabletsAssigned(t, "reads")
	ok(t, "put", "reads", "r1", "a:x=apple", "a:y=10", "--timestamp", "1000")
	ok(t, "put", "reads", "r1", "a:x=avocado", "--timestamp", "2000")
	ok(t, "put", "reads", "r2", "b:z=banana", "--timestamp", "3000")
	ok(t, "put", "reads", `"\xff\x01"`, "a:x=bin", "--timestamp", "1000") // the key's bytes are FF 01
	ok(t, "put", "reads", "r3", "a:x=late", "--timestamp", "1796583600000000")

	// lines runs scan (or get) and returns its text lines as
	// "ROW FAMILY:QUALIFIER @TS VALUE [LABELS]".
	lines := func(args ...string) []string {
		t.Helper()
		return textLines(t, args...)
	}

	t.Run("binary keys round-trip", func(t *testing.T) {
		wantList(t, "scan --prefix \\xff", lines("scan", "reads", "--prefix", `"\xff"`), `"\xff\x01" a:x @1000 bin`)
		wantList(t, "get as printed", lines("get", "reads", `"\xff\x01"`), `"\xff\x01" a:x @1000 bin`)
		wantList(t, "get --hex", lines("get", "reads", "ff01", "--hex"), "ff01 a:78 @1000 62696e")
		wantList(t, "scan --hex --start --end", lines("scan", "reads", "--hex", "--start", "ff", "--end", "ff02"), "ff01 a:78 @1000 62696e")
		wantList(t, "--hex --columns", lines("scan", "reads", "--hex", "--columns", "a:78", "--start", "7231", "--end", "7232"), "7231 a:78 @2000 61766f6361646f", "7231 a:78 @1000 6170706c65")
		if out := ok(t, "get", "reads", "ff01", "--hex", "-o", "json"); out != `{"family":"a","qualifier":"78","qualifier_encoding":"hex","row":"ff01","row_encoding":"hex","timestamp":1000,"value":"62696e","value_encoding":"hex"}`+"\n" {
			t.Errorf("get --hex -o json: %s", out)
		}
		r := tabula(t, "get", "reads", `\xff\x01`) // unquoted: a key of 8 bytes, absent
		if r.code != 0 || !strings.Contains(r.stderr, `for bytes, quote it as the output prints it: '"\xff\x01"'`) {
			t.Errorf("get of an unquoted \\x key: exit %d stderr %s", r.code, r.stderr)
		}
	})

	t.Run("time range and format", func(t *testing.T) {
		wantList(t, "--time-range 1500,2500", lines("scan", "reads", "--time-range", "1500,2500"), "r1 a:x @2000 avocado")
		wantList(t, "--time-range ,1001", lines("scan", "reads", "--time-range", ",1001"), "r1 a:x @1000 apple", "r1 a:y @1000 10", `"\xff\x01" a:x @1000 bin`)
		wantList(t, "--time-range RFC 3339,", lines("scan", "reads", "--time-range", "2026-12-06T19:00:00Z,", "--time-format", "rfc3339"), "r3 a:x @2026-12-06T19:00:00Z late")
		wantList(t, "--time-range with offsets", lines("get", "reads", "r3", "--time-range", "2026-12-06T19:00:00+00:00,2026-12-06T20:00:00.000001+01:00"), "r3 a:x @1796583600000000 late")
		wantList(t, "--time-range past the cell", lines("get", "reads", "r3", "--time-range", "2026-12-06T19:00:00.000001Z,")) // empty
		if out := ok(t, "get", "reads", "r3", "--time-format", "rfc3339", "-o", "json"); !strings.Contains(out, `"timestamp":"2026-12-06T19:00:00Z"`) {
			t.Errorf("--time-format rfc3339 -o json: %s", out)
		}
		wantList(t, "--time-format rfc3339 micros", lines("get", "reads", "r1", "--columns", "a:y", "--time-format", "rfc3339"), "r1 a:y @1970-01-01T00:00:00.001Z 10")
	})

	t.Run("values, keys only, limits", func(t *testing.T) {
		wantList(t, "--value-range b,c", lines("scan", "reads", "--value-range", "b,c"), "r2 b:z @3000 banana", `"\xff\x01" a:x @1000 bin`)
		wantList(t, "--value-range quoted", lines("scan", "reads", "--value-range", `"avo",`, "--start", "r"), "r1 a:x @2000 avocado", "r2 b:z @3000 banana", "r3 a:x @1796583600000000 late", `"\xff\x01" a:x @1000 bin`)
		wantList(t, "--value-range --hex", lines("scan", "reads", "--hex", "--value-range", ",3130ff"), "7231 a:79 @1000 3130")
		wantList(t, "--keys-only", lines("scan", "reads", "--keys-only"), "r1", "r2", "r3", `"\xff\x01"`)
		wantList(t, "--keys-only --limit 2 --value-regex", lines("scan", "reads", "--keys-only", "--limit", "2", "--value-regex", "b.*|late"), "r2", "r3")
		if out := ok(t, "scan", "reads", "--keys-only", "--prefix", "r1", "-o", "json"); out != `{"row":"r1"}`+"\n" {
			t.Errorf("--keys-only -o json: %s", out)
		}
		wantList(t, "get --keys-only", lines("get", "reads", "r2", "--keys-only"), "r2")
		wantList(t, "--cells-per-row 1", lines("scan", "reads", "--cells-per-row", "1", "--prefix", "r"), "r1 a:x @2000 avocado", "r2 b:z @3000 banana", "r3 a:x @1796583600000000 late")
		wantList(t, "--versions 1 --cells-per-row 2", lines("get", "reads", "r1", "--versions", "1", "--cells-per-row", "2"), "r1 a:x @2000 avocado", "r1 a:y @1000 10")
	})

	t.Run("filter", func(t *testing.T) {
		wantList(t, "--filter", lines("scan", "reads", "--filter", `chain(family("a"), qualifier_regex("x"), cells_per_column_limit(1), row_key_regex("r.*"))`),
			"r1 a:x @2000 avocado", "r3 a:x @1796583600000000 late")
		// --filter comes before --versions: the newest version that matches.
		wantList(t, "--filter then --versions", lines("get", "reads", "r1", "--columns", "a", "--filter", `value_regex("apple")`, "--versions", "1"), "r1 a:x @1000 apple")
		wantList(t, "--filter after --time-range", lines("get", "reads", "r1", "--time-range", ",1001", "--filter", `cells_per_row_offset(1)`), "r1 a:y @1000 10")
		wantList(t, "labels", lines("get", "reads", "r2", "--filter", `apply_label_transformer("hit")`), "r2 b:z @3000 banana [hit]")
		if out := ok(t, "get", "reads", "r2", "--filter", `apply_label_transformer("hit")`, "-o", "json"); !strings.Contains(out, `"labels":["hit"]`) {
			t.Errorf("labels -o json: %s", out)
		}
		wantList(t, "binary in --filter", lines("scan", "reads", "--filter", `row_key_prefix("\xff")`), `"\xff\x01" a:x @1000 bin`)
		wantList(t, "condition", lines("scan", "reads", "--filter", `condition(chain(family("b"), value_regex("ban.*")), strip_value(), block())`), `r2 b:z @3000 ""`)
	})

	t.Run("bad input", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"scan", "reads", "--filter", `chain(family("a") pass())`}, []string{`--filter: at 19: expected ')' after the filters of chain (separate them with ','), found 'pass'`, "\n  chain(family(\"a\") pass())\n                    ^", "docs/FILTERS.md"}},
			{[]string{"get", "reads", "r1", "--filter", `family(a)`}, []string{`at 8: expected a string ("...") for the family name of family, found 'a'`}},
			{[]string{"scan", "reads", "--filter", `cells_per_row_limit(0)`}, []string{"--filter cells_per_row_limit(0)", "N is 0; a limit must be at least 1"}},
			{[]string{"scan", "reads", "--row-regex", `a(`}, []string{`the read's filter row_key_regex("a(")`, "does not compile"}},
			{[]string{"scan", "reads", "--time-range", "yesterday,"}, []string{`--time-range "yesterday,": FROM "yesterday" is neither microseconds since the Unix epoch nor an RFC 3339 time such as 2026-12-06T19:00:00Z`}},
			{[]string{"scan", "reads", "--time-range", "2000,1000"}, []string{`--time-range "2000,1000" is empty: TO must be after FROM`}},
			{[]string{"scan", "reads", "--time-range", "5"}, []string{`--time-range "5" has no ','; give FROM,TO`}},
			{[]string{"scan", "reads", "--time-range", ","}, []string{`--time-range "," bounds nothing`}},
			{[]string{"scan", "reads", "--value-range", "a,b,c"}, []string{`--value-range "a,b,c" has more than one ','`, `quote a bound that holds a comma ("a,b")`}},
			{[]string{"scan", "reads", "--value-range", "b,a"}, []string{`--value-range "b,a" is empty`}},
			{[]string{"get", "reads", "zz", "--hex"}, []string{`ROW "zz" is not hex (two hex digits a byte, as in ff01; --hex is on)`}},
			{[]string{"scan", "reads", "--hex", "--start", "r1"}, []string{`--start "r1" is not hex`}},
			{[]string{"get", "reads", `"\q"`}, []string{`ROW "\q" is not a quoted string: at 2: bad escape \q`, `'"\xff\x01"'`}},
			{[]string{"scan", "reads", "--time-format", "iso"}, []string{`--time-format "iso" is not micros or rfc3339`}},
			{[]string{"scan", "reads", "--cells-per-row", "-1"}, []string{"--cells-per-row -1 is negative; give N >= 1, or 0 for no limit"}},
			{[]string{"scan", "reads", "--limit", "-1"}, []string{"--limit -1 is negative"}},
			{[]string{"get", "reads", "r1", "--columns", "a,nofam:q"}, []string{`--columns: table reads has no family "nofam"; its families are a, b (or add it: tabula family add reads nofam)`}},
		} {
			r := fails(t, c.args, append(c.want, "hint: fix the argument named in the message")...)
			if r.code != 1 {
				t.Errorf("tabula %s: exit %d, want 1", strings.Join(c.args, " "), r.code)
			}
		}
		if r := fails(t, []string{"scan", "reads", "--cells-per-row", "x"}, "invalid argument \"x\" for \"--cells-per-row\"", "tabula scan --help"); r.code != 2 {
			t.Errorf("--cells-per-row x: exit %d, want 2 (a command line that does not parse)", r.code)
		}
	})
	t.Run("delete and count take quoted keys", func(t *testing.T) {
		if got := strings.TrimSpace(ok(t, "count", "reads", "--prefix", `"\xff"`)); got != "1" {
			t.Errorf(`count --prefix "\xff" = %s, want 1`, got)
		}
		ok(t, "delete", "reads", `"\xff\x01"`)
		wantList(t, "scan --keys-only after the delete", lines("scan", "reads", "--keys-only"), "r1", "r2", "r3")
	})
	ok(t, "table", "delete", "reads")
}
