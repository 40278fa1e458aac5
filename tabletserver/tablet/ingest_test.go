package tablet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// ingestRows is an IngestSource of rows given as "row" → cells.
func ingestRows(rows ...ingestRow) IngestSource {
	return func(yield func([]byte, []cell.Cell) error) error {
		for _, r := range rows {
			if err := yield([]byte(r.key), r.cells); err != nil {
				return err
			}
		}
		return nil
	}
}

type ingestRow struct {
	key   string
	cells []cell.Cell
}

func icell(fam, q string, ts int64, v string) cell.Cell {
	return cell.Cell{Family: fam, Qualifier: []byte(q), Timestamp: ts, Value: []byte(v)}
}

// An ingest orders like one write at its cut: it replaces an older cell of
// the same column and timestamp, an earlier tombstone does not hide it, a
// write during the ingest and every write after it win over it, and a
// reopened tablet numbers its writes above it.
func TestIngestOrdersAsOneWriteAtItsCut(t *testing.T) {
	opts := testOptions(t.TempDir())
	tb := openTablet(t, opts)
	apply(t, tb, "r1", set("a", "q", 5, "old"))
	apply(t, tb, "r2", set("a", "q", 5, "old"), delCol("a", "q", 0, 0)) // deletes before the cut
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, tb, "r3", set("b", "x", 1, "in-memtable")) // flushed by the cut

	res, err := tb.Ingest(bg, func(yield func([]byte, []cell.Cell) error) error {
		if err := yield([]byte("r1"), []cell.Cell{icell("a", "q", 5, "bulk"), icell("b", "y", 9, "bulk-b")}); err != nil {
			return err
		}
		// A write while the ingest runs comes after its cut.
		apply(t, tb, "r4", set("a", "q", 7, "during"))
		if err := yield([]byte("r2"), []cell.Cell{icell("a", "q", 5, "bulk")}); err != nil {
			return err
		}
		return yield([]byte("r4"), []cell.Cell{icell("a", "q", 7, "bulk")})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 3 || res.Cells != 4 || res.Files != 2 {
		t.Errorf("result %+v, want 3 rows, 4 cells, 2 files", res)
	}
	check := func(when string) {
		t.Helper()
		for row, want := range map[string]string{
			"r1": "a:q@5=bulk b:y@9=bulk-b",
			"r2": "a:q@5=bulk",
			"r3": "b:x@1=in-memtable",
			"r4": "a:q@7=during",
		} {
			if got := readRow(t, tb, row, nil); got != want {
				t.Errorf("%s: %s = %q, want %q", when, row, got, want)
			}
		}
	}
	check("after the ingest")
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	check("after a major compaction")

	// Reopened, the next write is numbered above the ingest's cells.
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Create = false
	tb = openTablet(t, opts)
	check("after a reopen")
	apply(t, tb, "r1", set("a", "q", 5, "after"))
	apply(t, tb, "r2", delCol("a", "q", 0, 0))
	if got := readRow(t, tb, "r1", nil); got != "a:q@5=after b:y@9=bulk-b" {
		t.Errorf("a write after the reopen: r1 = %q", got)
	}
	if got := readRow(t, tb, "r2", nil); got != "" {
		t.Errorf("a tombstone after the reopen: r2 = %q, want nothing", got)
	}
}

// A tablet reopened right after an ingest, with no write since, numbers
// its next write above the ingested cells: the manifest that published
// them covers their sequence number.
func TestIngestThenReopenWritesAbove(t *testing.T) {
	opts := testOptions(t.TempDir())
	tb := openTablet(t, opts)
	apply(t, tb, "r1", set("a", "q", 5, "old"))
	if _, err := tb.Ingest(bg, ingestRows(ingestRow{"r1", []cell.Cell{icell("a", "q", 5, "bulk")}})); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Create = false
	tb = openTablet(t, opts)
	if got := readRow(t, tb, "r1", nil); got != "a:q@5=bulk" {
		t.Fatalf("after the reopen: r1 = %q", got)
	}
	apply(t, tb, "r1", set("a", "q", 5, "after"))
	if got := readRow(t, tb, "r1", nil); got != "a:q@5=after" {
		t.Errorf("a write after the reopen: r1 = %q, want it to replace the ingested cell", got)
	}
	apply(t, tb, "r1", delRow())
	if got := readRow(t, tb, "r1", nil); got != "" {
		t.Errorf("a row delete after the reopen: r1 = %q, want nothing", got)
	}
}

// Bad input stops the ingest with an error naming it, and the tablet is as
// before: no cell of the load is readable and no file of it is left.
func TestIngestRefusesBadInputAndLeavesNothing(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Start, opts.End = []byte("b"), []byte("m")
	opts.Families = append(opts.Families, families.Family{Name: "n", ValueType: families.Sum})
	tb := openTablet(t, opts)
	apply(t, tb, "c", set("a", "q", 1, "kept"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	before := sstFiles(t, opts.Dir)
	good := ingestRow{"d", []cell.Cell{icell("a", "q", 2, "bulk"), icell("b", "q", 2, "bulk")}}
	for _, tc := range []struct {
		name string
		rows []ingestRow
		want string
		is   error
	}{
		{"out of range", []ingestRow{good, {"z", []cell.Cell{icell("a", "q", 1, "v")}}}, "outside", ErrOutOfRange},
		{"unsorted", []ingestRow{good, {"c", []cell.Cell{icell("a", "q", 1, "v")}}}, "strictly ascending", nil},
		{"repeated row", []ingestRow{good, good}, "strictly ascending", nil},
		{"unknown family", []ingestRow{good, {"e", []cell.Cell{icell("zz", "q", 1, "v")}}}, "zz", ErrUnknownFamily},
		{"aggregate family", []ingestRow{good, {"e", []cell.Cell{icell("n", "q", 1, "v")}}}, "aggregate", nil},
		{"server timestamp", []ingestRow{good, {"e", []cell.Cell{icell("a", "q", cell.ServerTimestamp, "v")}}}, "explicit timestamp", nil},
		{"same cell twice", []ingestRow{good, {"e", []cell.Cell{icell("a", "q", 1, "v"), icell("a", "q", 1, "w")}}}, "twice", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tb.Ingest(bg, ingestRows(tc.rows...))
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Ingest: %v, want an error about %q", err, tc.want)
			}
			if got := readRow(t, tb, "d", nil); got != "" {
				t.Errorf("row d = %q after a failed ingest, want nothing", got)
			}
			if got := readRow(t, tb, "c", nil); got != "a:q@1=kept" {
				t.Errorf("row c = %q, want the cell written before", got)
			}
			if after := sstFiles(t, opts.Dir); !maps.Equal(after, before) {
				t.Errorf("SSTables %v after a failed ingest, want %v", after, before)
			}
		})
	}
	// A source that fails midway (a client gone) leaves nothing either.
	boom := errors.New("stream cut")
	_, err := tb.Ingest(bg, func(yield func([]byte, []cell.Cell) error) error {
		if err := yield([]byte("d"), good.cells); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Ingest of a failing source: %v", err)
	}
	if got := readRow(t, tb, "d", nil); got != "" {
		t.Errorf("row d = %q after a cut stream", got)
	}
	if after := sstFiles(t, opts.Dir); !maps.Equal(after, before) {
		t.Errorf("SSTables %v after a cut stream, want %v", after, before)
	}
	// And a good load after all that is whole.
	if _, err := tb.Ingest(bg, ingestRows(good)); err != nil {
		t.Fatal(err)
	}
	if got := readRow(t, tb, "d", nil); got != "a:q@2=bulk b:q@2=bulk" {
		t.Errorf("row d = %q after a good ingest", got)
	}
}

// Ingests beside writers, flushes and background compactions: every
// acknowledged write and every ingested cell reads back, and no file's
// sequence numbers straddle an ingest's (the files stay ordered by them).
func TestIngestBesideWritersAndCompactions(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.DisableBackgroundWork = false
	opts.MemtableSize = 16 << 10
	opts.L0Trigger = 2
	tb := openTablet(t, opts)
	const writes, loads, perLoad = 400, 8, 50
	done := make(chan error, 1)
	go func() {
		for i := range writes {
			row := fmt.Sprintf("w%04d", i)
			if err := tb.Apply(bg, []byte(row), []cell.Mutation{set("a", "w", int64(i+1), row)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var seqs []uint64
	for l := range loads {
		var rows []ingestRow
		for i := range perLoad {
			k := fmt.Sprintf("i%02d%03d", l, i)
			rows = append(rows, ingestRow{k, []cell.Cell{icell("a", "i", int64(i+1), k), icell("b", "i", 1, k)}})
		}
		res, err := tb.Ingest(bg, ingestRows(rows...))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, res.Seq)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	v, err := tb.currentVersion()
	if err != nil {
		t.Fatal(err)
	}
	for name, fs := range v.files {
		for _, f := range fs {
			for _, s := range seqs {
				if f.ref.MinSeq < s && s < f.ref.MaxSeq {
					t.Errorf("family %s: file %s holds numbers %d..%d across ingest %d", name, f.ref.Path, f.ref.MinSeq, f.ref.MaxSeq, s)
				}
			}
		}
	}
	v.unref()
	check := func(when string) {
		t.Helper()
		for i := range writes {
			row := fmt.Sprintf("w%04d", i)
			if got, want := readRow(t, tb, row, nil), fmt.Sprintf("a:w@%d=%s", i+1, row); got != want {
				t.Fatalf("%s: %s = %q, want %q", when, row, got, want)
			}
		}
		for l := range loads {
			for i := range perLoad {
				k := fmt.Sprintf("i%02d%03d", l, i)
				if got, want := readRow(t, tb, k, nil), fmt.Sprintf("a:i@%d=%s b:i@1=%s", i+1, k, k); got != want {
					t.Fatalf("%s: %s = %q, want %q", when, k, got, want)
				}
			}
		}
	}
	check("after the loads")
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	check("after a major compaction")
}

// No compaction picks its inputs between an ingest's cut and the
// publication of its files (it could merge a file below the ingest's
// number with one above it); the compaction asked for meanwhile runs after.
func TestIngestHoldsCompactionsOff(t *testing.T) {
	opts := testOptions(t.TempDir())
	tb := openTablet(t, opts)
	apply(t, tb, "a0", set("a", "q", 1, "before"))
	picked := make(chan struct{}, 8)
	tb.testHookCompacting = func(context.Context, bool) { picked <- struct{}{} }
	compacted := make(chan error, 1)
	_, err := tb.Ingest(bg, func(yield func([]byte, []cell.Cell) error) error {
		if err := yield([]byte("b0"), []cell.Cell{icell("a", "q", 1, "bulk")}); err != nil {
			return err
		}
		apply(t, tb, "c0", set("a", "q", 1, "during")) // above the cut
		if err := tb.Flush(bg); err != nil {
			return err
		}
		go func() { compacted <- tb.Compact(bg, true) }()
		// It cannot pick while the ingest runs; waiting gives a wrong
		// implementation the time to show itself, a right one loses
		// nothing but the wait.
		select {
		case <-picked:
			t.Error("a major compaction picked its inputs during an ingest")
		case <-time.After(200 * time.Millisecond):
		}
		return yield([]byte("b1"), []cell.Cell{icell("a", "q", 1, "bulk")})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
	if got := scan(t, tb, ReadOptions{}); got != "a0{a:q@1=before} b0{a:q@1=bulk} b1{a:q@1=bulk} c0{a:q@1=during}" {
		t.Errorf("after the compaction: %s", got)
	}
}
