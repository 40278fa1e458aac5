package main

import (
	"strings"
	"testing"
)

// TestCLIRegexesTakeAnyByte: --row-regex, --qualifier-regex and
// --value-regex pass the argument's bytes as the pattern, so a raw 0xFF
// (not UTF-8) reaches the tablet servers and matches the byte 0xFF of a
// key, qualifier or value (RE2 on bytes, as Bigtable's).
func TestCLIRegexesTakeAnyByte(t *testing.T) {
	ok(t, "table", "create", "binre", "--family", "cf")
	waitTabletsAssigned(t, "binre")
	ok(t, "put", "binre", "k\xff", "cf:q\xff=v1", "cf:plain=v\xff", "--timestamp", "1000")
	ok(t, "put", "binre", "k1", "cf:q1=v1", "cf:q\xff=v1", "--timestamp", "1000")

	cells := func(args ...string) []string {
		t.Helper()
		out := ok(t, append([]string{"scan", "binre"}, args...)...)
		var lines []string
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if l != "" {
				// row, column and value; the timestamp is the same everywhere
				f := strings.Split(l, "\t")
				lines = append(lines, f[0]+" "+f[1]+" "+f[len(f)-1])
			}
		}
		return lines
	}
	// The text output quotes what is not printable: "k\xff".
	wantList(t, "--row-regex k\\xff", cells("--row-regex", "k\xff"), `"k\xff" cf:plain "v\xff"`, `"k\xff" cf:"q\xff" v1`)
	wantList(t, "--qualifier-regex q\\xff", cells("--qualifier-regex", "q\xff"), `k1 cf:"q\xff" v1`, `"k\xff" cf:"q\xff" v1`)
	wantList(t, "--value-regex v\\xff", cells("--value-regex", "v\xff"), `"k\xff" cf:plain "v\xff"`)
	// A pattern byte is one character: [^\xff] is any other byte.
	wantList(t, "--row-regex k[^\\xff]", cells("--row-regex", "k[^\xff]"), "k1 cf:q1 v1", `k1 cf:"q\xff" v1`)
}
