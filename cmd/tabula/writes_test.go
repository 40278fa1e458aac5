package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// textLines runs the binary (which must exit 0) and returns its non-empty
// text lines with tabs turned into spaces: "ROW FAMILY:QUALIFIER @TS VALUE".
func textLines(t *testing.T, args ...string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(ok(t, args...), "\n"), "\n") {
		if l != "" {
			out = append(out, strings.ReplaceAll(l, "\t", " "))
		}
	}
	return out
}

// TestCLIWrites runs incr, append, checkandput and the timed deletes
// against the dev cluster, then their bad input (exit status, and a
// message naming the problem and the fix).
func TestCLIWrites(t *testing.T) {
	ok(t, "table", "create", "writes", "--family", "c", "--family", "s", "--family", "agg:type=sum")
	waitTabletsAssigned(t, "writes")
	lines := func(args ...string) []string {
		t.Helper()
		return textLines(t, args...)
	}
	// cellsOf is a row's cells as "FAMILY:QUALIFIER=VALUE" (no timestamps,
	// which the server's clock chose).
	cellsOf := func(row string, extra ...string) []string {
		t.Helper()
		var out []string
		for _, l := range lines(append([]string{"get", "writes", row}, extra...)...) {
			f := strings.Fields(l)
			out = append(out, f[1]+"="+strings.Join(f[3:], " "))
		}
		return out
	}

	t.Run("incr", func(t *testing.T) {
		wantList(t, "incr (absent: 0 + 1)", lines("incr", "writes", "r1", "c:n"), "1")
		wantList(t, "incr 10", lines("incr", "writes", "r1", "c:n", "10"), "11")
		wantList(t, "incr -- -20", lines("incr", "writes", "r1", "c:n", "--", "-20"), "-9")
		if out := ok(t, "incr", "writes", "r1", "c:n", "-o", "json"); out != `{"value":-8}`+"\n" {
			t.Errorf("incr -o json: %s", out)
		}
		wantList(t, "get the counter", cellsOf("r1", "--versions", "1"), `c:n="\xff\xff\xff\xff\xff\xff\xff\xf8"`)
		wantList(t, "incr --hex", lines("incr", "writes", "7231", "c:6e", "--hex"), "-7") // r1 c:n
	})

	t.Run("put typed", func(t *testing.T) {
		// Quoted as get prints binary bytes, a quoted qualifier holding
		// '=', and --hex: what get prints is what put takes.
		ok(t, "put", "writes", `"p\x00\xff"`, `s:"a=b"="\x00\xfe"`, `s:"\x01"=plain"quote`)
		wantList(t, "put quoted", cellsOf(`"p\x00\xff"`), `s:"\x01"="plain\"quote"`, `s:a=b="\x00\xfe"`)
		ok(t, "put", "writes", "70317a", "s:ff=0001", "--hex") // p1z s:\xff
		wantList(t, "put --hex", cellsOf("p1z"), `s:"\xff"="\x00\x01"`)
		fails(t, []string{"put", "writes", "p2", `s:"a=b`}, `close the qualifier's quotes`)
	})

	t.Run("append", func(t *testing.T) {
		wantList(t, "append to absent", cellsOf("r2"))
		out := lines("append", "writes", "r2", "s:a=ab", "s:b=x")
		if len(out) != 2 || !strings.HasPrefix(out[0], "r2 s:a @") || !strings.HasSuffix(out[0], " ab") || !strings.HasSuffix(out[1], " x") {
			t.Errorf("append printed %q", out)
		}
		ok(t, "append", "writes", "r2", `s:a="\x00,c"`)
		wantList(t, "after two appends", cellsOf("r2", "--versions", "1"), `s:a="ab\x00,c"`, "s:b=x")
		ok(t, "append", "writes", "7232", "s:61=ff", "--hex")
		wantList(t, "append --hex", cellsOf("r2", "--versions", "1", "--columns", "s:a"), `s:a="ab\x00,c\xff"`)
	})

	t.Run("checkandput", func(t *testing.T) {
		wantList(t, "--if-absent, absent", lines("checkandput", "writes", "r3", "--if-absent", "s:state", "s:state=pending"), "matched: true")
		wantList(t, "--if-absent, present", lines("checkandput", "writes", "r3", "--if-absent", "s:state", "s:state=other", "--else", "s:conflict=1"), "matched: false")
		wantList(t, "after --if-absent", cellsOf("r3"), "s:conflict=1", "s:state=pending")
		wantList(t, "--if-value, equal", lines("checkandput", "writes", "r3", "--if-value", "s:state=pending", "s:state=done"), "matched: true")
		// Only the newest version counts: "pending" is an older one now.
		if out := ok(t, "checkandput", "writes", "r3", "--if-value", "s:state=pending", "s:state=again", "-o", "json"); out != `{"matched":false}`+"\n" {
			t.Errorf("--if-value on an older version -o json: %s", out)
		}
		wantList(t, "after --if-value", cellsOf("r3", "--versions", "1"), "s:conflict=1", "s:state=done")
		wantList(t, "--if-filter", lines("checkandput", "writes", "r3", "--if-filter", `chain(family("s"), value_regex("d.*"))`, "s:x=1"), "matched: true")
		wantList(t, "--if-filter, no match", lines("checkandput", "writes", "r3", "--if-filter", `value_regex("zzz")`, "s:y=1"), "matched: false")
		wantList(t, "--if-value of a binary value, --timestamp", lines("checkandput", "writes", "r3", "--if-value", `s:x=1`, `s:bin="\x00"`, "--timestamp", "5"), "matched: true")
		wantList(t, "--hex", lines("checkandput", "writes", "7233", "--hex", "--if-value", "s:62696e=00", "s:68=6869"), "matched: true")
		wantList(t, "after all", cellsOf("r3", "--versions", "1"), `s:bin="\x00"`, "s:conflict=1", "s:h=hi", "s:state=done", "s:x=1")
		wantList(t, "--timestamp", lines("get", "writes", "r3", "--columns", "s:bin"), `r3 s:bin @5 "\x00"`)
	})

	t.Run("delete at a timestamp and of a time range", func(t *testing.T) {
		for _, ts := range []string{"1000", "2000", "3000", "4000"} {
			ok(t, "put", "writes", "r4", "s:v=at"+ts, "--timestamp", ts)
		}
		ok(t, "delete", "writes", "r4", "s:v", "--timestamp", "2000")
		wantList(t, "after --timestamp 2000", lines("get", "writes", "r4"), "r4 s:v @4000 at4000", "r4 s:v @3000 at3000", "r4 s:v @1000 at1000")
		ok(t, "delete", "writes", "r4", "s:v", "--timestamp", "1970-01-01T00:00:00.001Z") // 1000 µs
		wantList(t, "after --timestamp RFC 3339", lines("get", "writes", "r4"), "r4 s:v @4000 at4000", "r4 s:v @3000 at3000")
		ok(t, "put", "writes", "r4", "s:v=at5000", "--timestamp", "5000")
		out := ok(t, "delete", "writes", "r4", "s:v", "--time-range", "3000,5000")
		if !strings.Contains(out, "deleted the versions in [3000, 5000) of column s:v of row r4") {
			t.Errorf("delete --time-range printed %q", out)
		}
		wantList(t, "after --time-range 3000,5000", lines("get", "writes", "r4"), "r4 s:v @5000 at5000")
		ok(t, "put", "writes", "r4", "s:v=at9000", "--timestamp", "9000")
		ok(t, "delete", "writes", "r4", "s:v", "--time-range", "5000,")
		wantList(t, "after --time-range 5000,", lines("get", "writes", "r4"))
		ok(t, "put", "writes", `"\xff"`, "s:v=bin", "--timestamp", "7")
		ok(t, "delete", "writes", "ff", "s:76", "--hex", "--timestamp", "7")
		wantList(t, "delete --hex", lines("get", "writes", `"\xff"`))
	})

	t.Run("bad input", func(t *testing.T) {
		ok(t, "put", "writes", "r5", "c:text=5")
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"incr", "writes", "r5", "c:text"}, []string{"the cell's newest value is not a counter", "its value is 1 bytes, not an 8-byte big-endian int64",
				"Start the counter over: tabula delete writes r5 c:text, then tabula incr writes r5 c:text N"}},
			{[]string{"incr", "writes", "r5", "agg:n"}, []string{"family agg is an aggregate", "tabula add writes r5 agg:n=N"}},
			{[]string{"incr", "writes", "r5", "c:n", "x"}, []string{`N "x" is not an int64`}},
			{[]string{"incr", "writes", "r5", "cn"}, []string{`column "cn" has no ':'; write FAMILY:QUALIFIER`}},
			{[]string{"incr", "writes", "zz", "c:n", "--hex"}, []string{`ROW "zz" is not hex`}},
			{[]string{"append", "writes", "r5", "s:a"}, []string{`cell "s:a" has no '='; write FAMILY:QUALIFIER=VALUE`}},
			{[]string{"append", "writes", "r5", `s:a="\q"`}, []string{`is not a quoted string`}},
			{[]string{"checkandput", "writes", "r5", "s:a=1"}, []string{"give exactly one condition: --if-value FAMILY:QUALIFIER=V, --if-absent FAMILY:QUALIFIER or --if-filter EXPR (0 given)"}},
			{[]string{"checkandput", "writes", "r5", "--if-absent", "s:a", "--if-value", "s:a=1", "s:a=1"}, []string{"give exactly one condition", "(2 given)"}},
			{[]string{"checkandput", "writes", "r5", "--if-filter", "chain(", "s:a=1"}, []string{"--if-filter: at 7:", "docs/FILTERS.md"}},
			{[]string{"checkandput", "writes", "r5", "--if-value", "s:a", "s:a=1"}, []string{`--if-value "s:a" has no '='`}},
			{[]string{"checkandput", "writes", "r5", "--if-absent", "s:a", "s:a=1", "--else", "bad"}, []string{`--else "bad" has no '='`}},
			{[]string{"delete", "writes", "r5", "s", "--timestamp", "1"}, []string{"name it as FAMILY:QUALIFIER"}},
			{[]string{"delete", "writes", "r5", "s:a", "--timestamp", "yesterday"}, []string{`--timestamp "yesterday"`, "RFC 3339"}},
			{[]string{"delete", "writes", "r5", "s:a", "--timestamp", "1", "--time-range", "1,2"}, []string{"give --timestamp or --time-range, not both"}},
			{[]string{"delete", "writes", "r5", "s:a", "--time-range", "5,1"}, []string{`--time-range "5,1" is empty`}},
		} {
			r := fails(t, c.args, append(c.want, "hint: fix the argument named in the message")...)
			if r.code != 1 {
				t.Errorf("tabula %s: exit %d, want 1", strings.Join(c.args, " "), r.code)
			}
		}
		for _, args := range [][]string{
			{"incr", "writes", "r5"},
			{"incr", "writes", "r5", "c:n", "1", "2"},
			{"append", "writes", "r5"},
			{"checkandput", "writes", "r5", "--if-nope", "x", "s:a=1"},
			{"delete", "writes", "r5", "s:a", "--timestamp"},
		} {
			if r := fails(t, args, "hint: run `tabula "+args[0]+" --help` for usage"); r.code != 2 {
				t.Errorf("tabula %s: exit %d, want 2 (a command line that does not parse)", strings.Join(args, " "), r.code)
			}
		}
	})
	ok(t, "table", "delete", "writes")
}

// TestCLIVersion checks `tabula version` and `tabula --version`: the
// module, the Go version the binary was built with, and the commit line
// (unknown here: the test builds without VCS stamping).
func TestCLIVersion(t *testing.T) {
	r := tabulaEnv(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tabula ") || !strings.Contains(r.stdout, " commit ") || !strings.HasSuffix(r.stdout, " "+runtime.Version()+"\n") {
		t.Errorf("--version: exit %d, %q", r.code, r.stdout)
	}
	r = tabulaEnv(t, nil, "version")
	for _, w := range []string{"module: github.com/tabuladb/tabula\n", "commit: ", "go: " + runtime.Version() + "\n"} {
		if r.code != 0 || !strings.Contains(r.stdout, w) {
			t.Errorf("version: exit %d, output lacks %q:\n%s", r.code, w, r.stdout)
		}
	}
	r = tabulaEnv(t, nil, "version", "-o", "json")
	var v buildVersion
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Go != runtime.Version() || v.Module != "github.com/tabuladb/tabula" {
		t.Errorf("version -o json: %v %+v %q", err, v, r.stdout)
	}
	if r := tabulaEnv(t, nil, "version", "extra"); r.code != 2 {
		t.Errorf("version extra: exit %d, want 2", r.code)
	}
}
