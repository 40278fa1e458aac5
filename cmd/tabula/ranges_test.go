package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestTableRanges runs `tabula table ranges` on a flushed table of two
// tablets (2,000 rows of 1 KB): asked for pieces of an eighth of the
// table, it prints about eight ranges that cover the table with no gap or
// overlap (their counts add up to every row), each START,END readable as
// the CLI reads a key pair (export --range's form), sizes about the
// target adding up to the table's; JSON output says the same; bad
// --target-size values fail naming the flag.
func TestTableRanges(t *testing.T) {
	const table, rows = "ranges-t", 2000
	ok(t, "bench", "--table", table, "--rows", strconv.Itoa(rows), "--value-size", "1000", "--tablets", "2",
		"--clients", "2", "--batch", "100", "--workloads", "seqwrite", "--keep", "--seed", "7")
	t.Cleanup(func() { tabula(t, "table", "delete", table) })
	ok(t, "table", "compact", table, "--major") // flushes: samples come from SSTables

	type rng struct {
		start, end string
		size       int64
	}
	parse := func(out string) []rng {
		t.Helper()
		var rs []rng
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				t.Fatalf("line %q is not START END SIZE", line)
			}
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("line %q: size: %v", line, err)
			}
			rs = append(rs, rng{f[0], f[1], n})
		}
		return rs
	}
	whole := parse(ok(t, "table", "ranges", table, "--target-size", "1GiB"))
	if len(whole) != 1 || whole[0].start != `""` || whole[0].end != `""` || whole[0].size < rows*1000 {
		t.Fatalf("one range of the whole table expected, got %+v", whole)
	}
	total := whole[0].size
	target := total / 8
	rs := parse(ok(t, "table", "ranges", table, "--target-size", strconv.FormatInt(target, 10)))
	t.Logf("ranges of about %d bytes in %d: %+v", target, total, rs)
	if len(rs) < 6 || len(rs) > 10 {
		t.Fatalf("%d ranges of about %d bytes in %d: %+v", len(rs), target, total, rs)
	}
	var sum, counted int64
	for i, r := range rs {
		if (i == 0) != (r.start == `""`) || (i == len(rs)-1) != (r.end == `""`) || (i > 0 && r.start != rs[i-1].end) {
			t.Fatalf("ranges do not chain from the table's start to its end: %+v", rs)
		}
		if r.size < target/2 || r.size > target*3/2 {
			t.Errorf("range %d [%s, %s) holds %d bytes, want about %d", i, r.start, r.end, r.size, target)
		}
		sum += r.size
		// START,END in the form a key pair flag reads (export --range).
		a, b, err := splitPair("--range", r.start+","+r.end)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{a, b} {
			if _, err := parseBytesArg("--range", k, false); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"count", table}
		if r.start != `""` {
			args = append(args, "--start", r.start)
		}
		if r.end != `""` {
			args = append(args, "--end", r.end)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(ok(t, args...)), 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("count of range %d: %d, %v", i, n, err)
		}
		counted += n
	}
	if sum != total || counted != rows {
		t.Fatalf("ranges hold %d bytes and %d rows, want %d and %d", sum, counted, total, rows)
	}

	// JSON: the same ranges.
	out := ok(t, "table", "ranges", table, "--target-size", strconv.FormatInt(target, 10), "-o", "json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(rs) {
		t.Fatalf("JSON gave %d ranges, text %d", len(lines), len(rs))
	}
	for i, line := range lines {
		var obj struct {
			Start, End string
			SizeBytes  int64 `json:"size_bytes"`
		}
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if display([]byte(obj.Start)) != rs[i].start || display([]byte(obj.End)) != rs[i].end || obj.SizeBytes != rs[i].size {
			t.Fatalf("JSON range %d %q differs from the text's %+v", i, line, rs[i])
		}
	}

	// A sub-range: --prefix and --start/--end stay inside it.
	sub := parse(ok(t, "table", "ranges", table, "--start", rs[1].start, "--end", rs[3].start, "--target-size", strconv.FormatInt(target, 10)))
	if sub[0].start != rs[1].start || sub[len(sub)-1].end != rs[3].start || len(sub) < 1 || len(sub) > 3 {
		t.Fatalf("ranges of [%s, %s): %+v", rs[1].start, rs[3].start, sub)
	}

	for _, tc := range []struct {
		size string
		want []string
	}{
		{"abc", []string{"--target-size", "abc", "64MiB"}},
		{"0", []string{"--target-size 0 is not positive"}},
		{"-5", []string{"--target-size", "-5"}},
	} {
		fails(t, []string{"table", "ranges", table, "--target-size", tc.size}, tc.want...)
	}
	fails(t, []string{"table", "ranges", table, "--prefix", "a", "--start", "b"}, "--prefix cannot be combined")
	fails(t, []string{"table", "ranges", table, "--start", "b", "--end", "a"}, "not before --end")
	fails(t, []string{"table", "ranges", "no-such-table"}, "no-such-table")
	fails(t, []string{"gateway", "--sample-size", "1XB"}, "--sample-size", "1XB")
}
