package tablet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/families"
)

// A nested rule hides condemned cells from reads at once, and a major
// compaction drops them: with the rule then removed, reads show the hidden
// cells again only where no compaction ran.
func TestNestedGCRuleOnReadsAndMajorCompaction(t *testing.T) {
	const sec = int64(time.Second / time.Microsecond)
	// At most 3 versions; past 60 s only the newest.
	rule, err := families.ParseGCRule("union(versions=3,intersection(age=60s,versions=1))")
	if err != nil {
		t.Fatal(err)
	}
	write := map[string][]int64{
		"many": {10, 20, 50, 95, 97, 99, 100}, // versions=3 keeps 100 99 97
		"old":  {10, 30, 100},                 // the age rule drops 30 and 10 at ranks 1 and 2
		"one":  {5},                           // old but the newest version: kept
	}
	const (
		all   = "a:many@10=v a:many@20=v a:many@50=v a:many@95=v a:many@97=v a:many@99=v a:many@100=v a:old@10=v a:old@30=v a:old@100=v a:one@5=v"
		alive = "a:many@97=v a:many@99=v a:many@100=v a:old@100=v a:one@5=v"
	)
	for _, flush := range []bool{false, true} {
		for _, compact := range []bool{false, true} { // compact flushes first
			name := fmt.Sprintf("flush=%v compact=%v", flush, compact)
			clk := &fakeClock{}
			clk.now.Store(100 * sec)
			opts := testOptions(t.TempDir())
			opts.Families = []families.Family{{Name: "a", GCRule: rule}}
			opts.Clock = clk.Now
			tb := openTablet(t, opts)
			for q, tss := range write {
				for _, ts := range tss {
					apply(t, tb, "r", set("a", q, ts*sec, "v"))
				}
			}
			if flush || compact {
				if err := tb.Flush(bg); err != nil {
					t.Fatal(err)
				}
			}
			if got := cellsOf(readRow(t, tb, "r", nil)); got != alive {
				t.Errorf("%s: read %q, want %q", name, got, alive)
			}
			if compact {
				if err := tb.Compact(bg, true); err != nil {
					t.Fatal(err)
				}
				if got := cellsOf(readRow(t, tb, "r", nil)); got != alive {
					t.Errorf("%s: after major compaction read %q, want %q", name, got, alive)
				}
			}
			if err := tb.SetFamilies([]families.Family{{Name: "a"}}); err != nil {
				t.Fatal(err)
			}
			want := all
			if compact {
				want = alive
			}
			if got := cellsOf(readRow(t, tb, "r", nil)); got != want {
				t.Errorf("%s: with the rule removed read %q, want %q", name, got, want)
			}
		}
	}
}

// cellsOf rewrites readRow's output with timestamps in seconds, sorted,
// for short expectations.
func cellsOf(s string) string {
	var out []string
	for _, c := range strings.Fields(s) {
		var fam, rest string
		fam, rest, _ = strings.Cut(c, ":")
		q, rest, _ := strings.Cut(rest, "@")
		ts, v, _ := strings.Cut(rest, "=")
		var n int64
		fmt.Sscan(ts, &n)
		out = append(out, fmt.Sprintf("%s:%s@%d=%s", fam, q, n/int64(time.Second/time.Microsecond), v))
	}
	// Sort by qualifier then timestamp ascending (numerically).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && lessCell(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return strings.Join(out, " ")
}

func lessCell(a, b string) bool {
	qa, ta, _ := strings.Cut(a, "@")
	qb, tb, _ := strings.Cut(b, "@")
	if qa != qb {
		return qa < qb
	}
	var na, nb int64
	fmt.Sscan(strings.SplitN(ta, "=", 2)[0], &na)
	fmt.Sscan(strings.SplitN(tb, "=", 2)[0], &nb)
	return na < nb
}

// A nested rule that condemns old cells even when they are the newest
// version lets whole expired files go unread; one that keeps the newest
// version (an intersection with versions) must not.
func TestNestedGCRuleDropsWholeFilesOnlyWhenEveryCellIsCondemned(t *testing.T) {
	const sec = int64(time.Second / time.Microsecond)
	for _, tc := range []struct {
		rule  string
		drops bool
		want  string
	}{
		{"union(age=100s,intersection(versions=1,age=10s))", true, "r1{a:q@1100000000=v} r2{a:q@1200000000=v}"},
		{"intersection(age=100s,versions=1)", false, "r0{a:q@1000000000=v} r1{a:q@1100000000=v} r2{a:q@1200000000=v}"},
	} {
		rule, err := families.ParseGCRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		clk := &fakeClock{}
		clk.now.Store(1000 * sec)
		opts := testOptions(t.TempDir())
		opts.Families = []families.Family{{Name: "a", GCRule: rule}}
		opts.Clock = clk.Now
		tb := openTablet(t, opts)
		for i := int64(0); i < 3; i++ {
			apply(t, tb, fmt.Sprint("r", i), set("a", "q", (1000+i*100)*sec, "v"))
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
		es, err := os.ReadDir(filepath.Join(tb.dir, "a"))
		if err != nil || len(es) != 3 {
			t.Fatalf("files %v, %v", es, err)
		}
		oldest := filepath.Join(tb.dir, "a", es[0].Name())
		clk.now.Store(1150 * sec) // the age cutoff 1050 s: only the oldest file is past it
		if tc.drops {
			// Make the oldest file unreadable: dropping must not read it.
			if err := os.Truncate(oldest, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := tb.Compact(bg, false); err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		// Without the drop the files may be merged: the scan tells.
		if _, err := os.Stat(oldest); tc.drops && !os.IsNotExist(err) {
			t.Errorf("%s: expired file still there: %v", tc.rule, err)
		}
		if got := scan(t, tb, ReadOptions{}); got != tc.want {
			t.Errorf("%s: scan %q, want %q", tc.rule, got, tc.want)
		}
	}
}
