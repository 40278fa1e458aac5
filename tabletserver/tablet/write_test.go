package tablet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

func TestDeleteDoesNotMaskLaterWrite(t *testing.T) {
	for _, flush := range []bool{false, true} {
		tb := openTablet(t, testOptions(t.TempDir()))
		apply(t, tb, "r", set("a", "q", 100, "old"))
		apply(t, tb, "r", delCol("a", "q", 0, 0))
		if flush {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
		// A later put with an OLDER timestamp than the deleted cell is visible.
		apply(t, tb, "r", set("a", "q", 50, "later"))
		if got, want := readRow(t, tb, "r", nil), "a:q@50=later"; got != want {
			t.Fatalf("flush=%v: got %q, want %q", flush, got, want)
		}
		apply(t, tb, "r", delRow())
		apply(t, tb, "r", set("b", "x", 1, "after-row-delete"))
		if got, want := readRow(t, tb, "r", nil), "b:x@1=after-row-delete"; got != want {
			t.Fatalf("flush=%v: got %q, want %q", flush, got, want)
		}
		apply(t, tb, "r", set("a", "q", 10, "again"))
		if got, want := readRow(t, tb, "r", nil), "a:q@10=again b:x@1=after-row-delete"; got != want {
			t.Fatalf("flush=%v: got %q, want %q", flush, got, want)
		}
	}
}

func TestDeleteKinds(t *testing.T) {
	base := []cell.Mutation{
		set("a", "q", 10, "q10"), set("a", "q", 20, "q20"), set("a", "q", 30, "q30"),
		set("a", "p", 5, "p5"), set("b", "z", 7, "z7"),
	}
	cases := []struct {
		name string
		del  []cell.Mutation
		want string
	}{
		{"column time range", []cell.Mutation{delCol("a", "q", 15, 30)}, "a:p@5=p5 a:q@30=q30 a:q@10=q10 b:z@7=z7"},
		{"column open end", []cell.Mutation{delCol("a", "q", 20, 0)}, "a:p@5=p5 a:q@10=q10 b:z@7=z7"},
		{"whole column", []cell.Mutation{delCol("a", "q", 0, 0)}, "a:p@5=p5 b:z@7=z7"},
		{"two ranges in one batch", []cell.Mutation{delCol("a", "q", 0, 11), delCol("a", "q", 25, 0)}, "a:p@5=p5 a:q@20=q20 b:z@7=z7"},
		{"family", []cell.Mutation{delFam("a")}, "b:z@7=z7"},
		{"row", []cell.Mutation{delRow()}, ""},
		{"set then delete in one batch", []cell.Mutation{set("a", "n", 1, "n"), delCol("a", "n", 0, 0)}, "a:p@5=p5 a:q@30=q30 a:q@20=q20 a:q@10=q10 b:z@7=z7"},
		{"delete then set in one batch", []cell.Mutation{delFam("a"), set("a", "n", 1, "n")}, "a:n@1=n b:z@7=z7"},
	}
	for _, c := range cases {
		for _, flush := range []bool{false, true} {
			tb := openTablet(t, testOptions(t.TempDir()))
			apply(t, tb, "r", base...)
			if flush {
				if err := tb.Flush(bg); err != nil {
					t.Fatal(err)
				}
			}
			apply(t, tb, "r", c.del...)
			if got := readRow(t, tb, "r", nil); got != c.want {
				t.Errorf("%s (flush=%v): got %q, want %q", c.name, flush, got, c.want)
			}
			if err := tb.Compact(bg, true); err != nil {
				t.Fatal(err)
			}
			if got := readRow(t, tb, "r", nil); got != c.want {
				t.Errorf("%s after major compaction: got %q, want %q", c.name, got, c.want)
			}
		}
	}
}

func TestSameTimestampOverwrites(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "q", 5, "one"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, tb, "r", set("a", "q", 5, "two"))
	if got := readRow(t, tb, "r", nil); got != "a:q@5=two" {
		t.Fatalf("got %q", got)
	}
	apply(t, tb, "r", set("a", "q", 5, "three"), set("a", "q", 5, "four"))
	if got := readRow(t, tb, "r", nil); got != "a:q@5=four" {
		t.Fatalf("in one batch: got %q", got)
	}
}

func TestServerTimestampUsesClock(t *testing.T) {
	clk := &fakeClock{}
	clk.now.Store(777)
	opts := testOptions(t.TempDir())
	opts.Clock = clk.Now
	tb := openTablet(t, opts)
	apply(t, tb, "r", set("a", "q", cell.ServerTimestamp, "v"))
	if got := readRow(t, tb, "r", nil); got != "a:q@777=v" {
		t.Fatalf("got %q", got)
	}
}

func TestCheckAndMutate(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "flag", 1, "yes"))
	cases := []struct {
		name    string
		pred    *rowfilter.Filter
		matched bool
		want    string
	}{
		{"true branch", rowfilter.Chain(rowfilter.Family("a"), rowfilter.QualifierRegex("flag")), true, "a:flag@1=yes a:out@1=true"},
		{"false branch", rowfilter.ValueRegex("no"), false, "a:flag@1=yes a:out@1=false"},
		{"nil predicate on a row with cells", nil, true, "a:flag@1=yes a:out@1=true"},
	}
	for _, c := range cases {
		matched, err := tb.CheckAndMutate(bg, []byte("r"), c.pred,
			[]cell.Mutation{set("a", "out", 1, "true")}, []cell.Mutation{set("a", "out", 1, "false")})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if matched != c.matched {
			t.Errorf("%s: matched %v", c.name, matched)
		}
		if got := readRow(t, tb, "r", nil); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	matched, err := tb.CheckAndMutate(bg, []byte("absent"), nil, []cell.Mutation{set("a", "x", 1, "t")}, nil)
	if err != nil || matched {
		t.Fatalf("absent row: matched %v, %v", matched, err)
	}
	if got := readRow(t, tb, "absent", nil); got != "" {
		t.Fatalf("empty false branch wrote %q", got)
	}
	if _, err := tb.CheckAndMutate(bg, []byte("r"), rowfilter.ValueRegex("("), nil, nil); !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("bad predicate: %v", err)
	}
}

func be(n int64) string { return string(binary.BigEndian.AppendUint64(nil, uint64(n))) }

func TestReadModifyWrite(t *testing.T) {
	clk := &fakeClock{}
	clk.now.Store(1000)
	opts := testOptions(t.TempDir())
	opts.Clock = clk.Now
	tb := openTablet(t, opts)
	inc := func(q string, n int64) cell.ReadModifyWriteRule {
		return cell.ReadModifyWriteRule{Kind: cell.Increment, Family: "a", Qualifier: []byte(q), IncrementAmount: n}
	}
	got, err := tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{inc("n", 5)})
	if err != nil || render(got) != "a:n@1000="+be(5) {
		t.Fatalf("absent=0: %q, %v", render(got), err)
	}
	clk.now.Store(2000)
	got, err = tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{inc("n", -7), inc("n", 1)})
	if err != nil || render(got) != "a:n@2000="+be(-1) {
		t.Fatalf("two increments: %q, %v", render(got), err)
	}
	apply(t, tb, "r", set("a", "s", 1, "ab"), set("a", "bad", 1, "xyz"))
	got, err = tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{{Kind: cell.Append, Family: "a", Qualifier: []byte("s"), AppendValue: []byte("cd")}})
	if err != nil || render(got) != "a:s@2000=abcd" {
		t.Fatalf("append: %q, %v", render(got), err)
	}
	_, err = tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{inc("bad", 1)})
	if !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), "8-byte") {
		t.Fatalf("wrong-length value: %v", err)
	}
	// A future timestamp stays the newest: the result takes it.
	apply(t, tb, "r", set("a", "f", 5000, be(1)))
	got, err = tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{inc("f", 1)})
	if err != nil || render(got) != "a:f@5000="+be(2) {
		t.Fatalf("future timestamp: %q, %v", render(got), err)
	}
	if _, err := tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{{Kind: cell.Increment, Family: "nope", Qualifier: []byte("x")}}); !errors.Is(err, ErrUnknownFamily) {
		t.Fatalf("unknown family: %v", err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Start, opts.End = []byte("b"), []byte("m")
	tb := openTablet(t, opts)
	apply(t, tb, "c", set("a", "q", 1, "kept"))
	cases := []struct {
		name string
		row  string
		muts []cell.Mutation
		want error
	}{
		{"empty row", "", []cell.Mutation{set("a", "q", 1, "v")}, cell.ErrInvalid},
		{"oversized value", "c", []cell.Mutation{set("a", "q", 2, ""), {Kind: cell.SetCell, Family: "a", Value: make([]byte, cell.MaxValueLen+1)}}, cell.ErrInvalid},
		{"unknown family", "c", []cell.Mutation{set("a", "q", 3, "v"), set("zz", "q", 1, "v")}, ErrUnknownFamily},
		{"row before range", "a", []cell.Mutation{set("a", "q", 1, "v")}, ErrOutOfRange},
		{"row at end", "m", []cell.Mutation{set("a", "q", 1, "v")}, ErrOutOfRange},
		{"no mutations", "c", nil, cell.ErrInvalid},
		{"negative timestamp", "c", []cell.Mutation{set("a", "q", -5, "v")}, cell.ErrInvalid},
	}
	for _, c := range cases {
		if err := tb.Apply(bg, []byte(c.row), c.muts); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := tb.ReadRow(bg, []byte("c"), rowfilter.QualifierRegex("[")); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("bad regex filter: %v", err)
	}
	if _, err := tb.ReadRow(bg, []byte("z"), nil); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("read out of range: %v", err)
	}
	if got := readRow(t, tb, "c", nil); got != "a:q@1=kept" {
		t.Fatalf("stored data changed: %q", got)
	}
	if s := tb.Stats(); s.LastSeq != 1 {
		t.Fatalf("bad requests consumed sequence numbers: %d", s.LastSeq)
	}
}

// TestNarrowDeleteKeepsASetBetweenDeletesOfOneRequest: two deletes of one
// column with the same range start in one request are stored as one
// tombstone with the wider range (for what earlier requests wrote), but a
// set between them survives unless the later delete's own range covers it.
func TestNarrowDeleteKeepsASetBetweenDeletesOfOneRequest(t *testing.T) {
	for _, pad := range []int{0, 20} { // the small and the large normalize
		tb := openTablet(t, testOptions(t.TempDir()))
		apply(t, tb, "r", set("a", "q", 1, "old"), set("a", "q", 5, "old5"))
		muts := []cell.Mutation{delCol("a", "q", 0, 2), set("a", "q", 1, "new"), delCol("a", "q", 0, 1)}
		for i := 0; i < pad; i++ {
			muts = append(muts, set("b", fmt.Sprint("p", i), 1, "x"))
		}
		apply(t, tb, "r", muts...)
		got := readRow(t, tb, "r", rowfilter.Family("a"))
		if want := "a:q@5=old5 a:q@1=new"; got != want {
			t.Fatalf("%d mutations: got %q, want %q", len(muts), got, want)
		}
	}
}
