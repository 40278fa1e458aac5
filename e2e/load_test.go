package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// The write load: every row gets one cell in each of two families, with an
// explicit timestamp (so the client may retry it) and values derived from
// the row key, in one Apply. A row is therefore either fully present or
// fully absent; anything else is a half-applied write.
const (
	famA, famB = "a", "b"
	writeTS    = int64(1_000_000)
)

var qual = []byte("q")

// hexSplits are 8 split keys giving 9 tablets over rows "0/…" to "f/…".
var hexSplits = []string{"1", "3", "5", "7", "9", "b", "d", "f"}

func valueOf(fam, row string) []byte { return []byte("v/" + fam + "/" + row) }

// loadRow names writer g's i-th row; the first character spreads the rows
// over the hexSplits tablets.
func loadRow(g, i int) string { return fmt.Sprintf("%x/w%02d/%06d", (i*7+g)%16, g, i) }

func rowMutation(row string) *client.Mutation {
	return client.NewMutation().
		Set(famA, qual, writeTS, valueOf(famA, row)).
		Set(famB, qual, writeTS, valueOf(famB, row))
}

// createTable creates table with families famA and famB (or fams) and the
// given split keys, and waits until all its tablets are assigned.
func createTable(t *testing.T, c *cluster, cl *client.Client, table string, splits []string, fams ...string) []client.TabletInfo {
	t.Helper()
	if len(fams) == 0 {
		fams = []string{famA, famB}
	}
	var fs []families.Family
	for _, f := range fams {
		fs = append(fs, families.Default(f))
	}
	var keys [][]byte
	for _, s := range splits {
		keys = append(keys, []byte(s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := cl.Admin().CreateTable(ctx, table, fs, keys); err != nil {
		t.Fatalf("CreateTable(%s): %v", table, err)
	}
	ts := c.waitAssigned(t, cl, table, readyWait)
	if len(ts) != len(splits)+1 {
		t.Fatalf("table %s has %d tablets, want %d:\n%s", table, len(ts), len(splits)+1, formatTablets(ts))
	}
	return ts
}

// writeModel is what the writers did: the rows acknowledged and the rows
// whose write returned an error.
type writeModel struct {
	mu     sync.Mutex
	acked  map[string]time.Time // row → when the write was acknowledged
	order  []string             // acknowledged rows in the order acknowledged
	failed map[string]error     // row → the error its (last) write returned
}

// loader runs concurrent writers until stopped.
type loader struct {
	tbl   *client.Table
	model writeModel
	stop  chan struct{}
	wg    sync.WaitGroup
	acks  atomic.Int64
	fails atomic.Int64
}

// startLoad starts n writer goroutines writing new rows to tbl, each at
// most perWriter rows.
func startLoad(tbl *client.Table, n, perWriter int) *loader {
	l := &loader{tbl: tbl, stop: make(chan struct{})}
	l.model.acked = map[string]time.Time{}
	l.model.failed = map[string]error{}
	for g := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := range perWriter {
				select {
				case <-l.stop:
					return
				default:
				}
				row := loadRow(g, i)
				// Not derived from stop: a write under way finishes (or fails)
				// on its own, so its outcome is known.
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				err := tbl.Apply(ctx, []byte(row), rowMutation(row))
				cancel()
				l.model.mu.Lock()
				if err == nil {
					l.model.acked[row] = time.Now()
					l.model.order = append(l.model.order, row)
					delete(l.model.failed, row)
					l.acks.Add(1)
				} else {
					l.model.failed[row] = err
					l.fails.Add(1)
				}
				l.model.mu.Unlock()
			}
		}()
	}
	return l
}

// finish stops the writers and waits for their last writes.
func (l *loader) finish() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// waitAcks waits until at least n more writes have been acknowledged.
func (l *loader) waitAcks(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	target := l.acks.Load() + n
	deadline := time.Now().Add(within)
	for l.acks.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d acknowledged writes after %v (%d failed)", l.acks.Load(), target, within, l.fails.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failures returns up to n of the errors writers saw.
func (l *loader) failures(n int) []string {
	l.model.mu.Lock()
	defer l.model.mu.Unlock()
	var out []string
	for row, err := range l.model.failed {
		if len(out) == n {
			break
		}
		out = append(out, fmt.Sprintf("%s: %v", row, err))
	}
	return out
}

// randomAcked returns a random acknowledged row ("" if none yet).
func (l *loader) randomAcked(rng *rand.Rand) string {
	l.model.mu.Lock()
	defer l.model.mu.Unlock()
	if len(l.model.order) == 0 {
		return ""
	}
	return l.model.order[rng.IntN(len(l.model.order))]
}

// ackedSince counts rows acknowledged after since for which in is true.
func (l *loader) ackedSince(since time.Time, in func(row string) bool) int {
	l.model.mu.Lock()
	defer l.model.mu.Unlock()
	n := 0
	for row, at := range l.model.acked {
		if at.After(since) && in(row) {
			n++
		}
	}
	return n
}

// ackedBetween counts rows acknowledged after from and before to.
func (l *loader) ackedBetween(from, to time.Time) int {
	l.model.mu.Lock()
	defer l.model.mu.Unlock()
	n := 0
	for _, at := range l.model.acked {
		if at.After(from) && at.Before(to) {
			n++
		}
	}
	return n
}

var errAbsent = errors.New("row absent")

// checkLoadRow returns nil if cells are exactly the load's two cells of
// row, errAbsent if there are none, and a description of anything else.
func checkLoadRow(row string, cells []cell.Cell) error {
	if len(cells) == 0 {
		return errAbsent
	}
	want := []cell.Cell{
		{Row: []byte(row), Family: famA, Qualifier: qual, Timestamp: writeTS, Value: valueOf(famA, row)},
		{Row: []byte(row), Family: famB, Qualifier: qual, Timestamp: writeTS, Value: valueOf(famB, row)},
	}
	if len(cells) != len(want) {
		return fmt.Errorf("row %q has %d cells, want 2 (half-applied or duplicated?): %s", row, len(cells), formatCells(cells))
	}
	for i := range want {
		g, w := cells[i], want[i]
		if g.Family != w.Family || !bytes.Equal(g.Qualifier, w.Qualifier) || g.Timestamp != w.Timestamp || !bytes.Equal(g.Value, w.Value) {
			return fmt.Errorf("row %q cell %d is %s, want %s", row, i, formatCells(cells[i:i+1]), formatCells(want[i:i+1]))
		}
	}
	return nil
}

func formatCells(cs []cell.Cell) string {
	var b bytes.Buffer
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s:%s@%d=%q", c.Family, c.Qualifier, c.Timestamp, c.Value)
	}
	return b.String()
}

// scanAll reads every row of the table in one scan, failing the test on an
// error or rows out of order.
func scanAll(t *testing.T, tbl *client.Table, opts ...client.ReadOption) []client.Row {
	t.Helper()
	rows, err := scan(tbl, client.NewRange(nil, nil), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// scan reads a row set and checks that row keys strictly increase.
func scan(tbl *client.Table, rs client.RowSet, opts ...client.ReadOption) ([]client.Row, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	it := tbl.ReadRows(ctx, rs, opts...)
	defer it.Close()
	var rows []client.Row
	for it.Next() {
		r := it.Row()
		if n := len(rows); n > 0 && bytes.Compare(rows[n-1].Key, r.Key) >= 0 {
			return rows, fmt.Errorf("scan: row %q after %q: not in key order", r.Key, rows[n-1].Key)
		}
		rows = append(rows, r)
	}
	if err := it.Err(); err != nil {
		return rows, fmt.Errorf("scan: after %d rows: %w", len(rows), err)
	}
	return rows, nil
}

// verify checks the table against the model: every acknowledged row is
// readable (by a full scan and by point reads of a sample) with the right
// cells, every row present was written, and no row is half-applied.
func (m *writeModel) verify(t *testing.T, tbl *client.Table, rng *rand.Rand) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := scanAll(t, tbl)
	present := map[string]bool{}
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	for _, r := range rows {
		row := string(r.Key)
		present[row] = true
		_, acked := m.acked[row]
		_, failed := m.failed[row]
		if !acked && !failed {
			report("scan returned row %q that no writer wrote", row)
			continue
		}
		if err := checkLoadRow(row, r.Cells); err != nil {
			report("scan: %v", err)
		}
	}
	var ackedRows []string
	for row := range m.acked {
		ackedRows = append(ackedRows, row)
		if !present[row] {
			report("acknowledged row %q is missing from the scan", row)
		}
	}
	failedPresent := 0
	for row := range m.failed {
		if present[row] {
			failedPresent++
		}
	}
	// Point reads: a sample of acknowledged rows and every failed one.
	slices.Sort(ackedRows)
	rng.Shuffle(len(ackedRows), func(i, j int) { ackedRows[i], ackedRows[j] = ackedRows[j], ackedRows[i] })
	sample := ackedRows[:min(200, len(ackedRows))]
	for row := range m.failed {
		sample = append(sample, row)
	}
	for _, row := range sample {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		r, err := tbl.ReadRow(ctx, []byte(row))
		cancel()
		if err != nil {
			report("ReadRow(%q): %v", row, err)
			continue
		}
		err = checkLoadRow(row, r.Cells)
		_, acked := m.acked[row]
		switch {
		case err == nil:
		case errors.Is(err, errAbsent) && !acked:
		default:
			report("ReadRow(%q) (acked=%v): %v", row, acked, err)
		}
		if (err == nil) != present[row] {
			report("ReadRow(%q) and the scan disagree: present in scan=%v", row, present[row])
		}
	}
	t.Logf("verified %d rows: %d acknowledged, %d failed (%d of them applied), %d point reads, %d problems",
		len(rows), len(m.acked), len(m.failed), failedPresent, len(sample), bad)
	if bad > 20 {
		t.Errorf("... and %d more problems", bad-20)
	}
}
