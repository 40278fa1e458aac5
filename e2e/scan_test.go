package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

// The scan table: scanRows rows "r00000"…, split every 300 rows into 10
// tablets. Each row has two versions of a:x and one b:y.
const scanRows = 3000

func scanKey(i int) string { return fmt.Sprintf("r%05d", i) }

func scanCells(row string) []cell.Cell {
	r := []byte(row)
	return []cell.Cell{
		{Row: r, Family: "a", Qualifier: []byte("x"), Timestamp: 2, Value: []byte("a2/" + row)},
		{Row: r, Family: "a", Qualifier: []byte("x"), Timestamp: 1, Value: []byte("a1/" + row)},
		{Row: r, Family: "b", Qualifier: []byte("y"), Timestamp: 1, Value: []byte("b/" + row)},
	}
}

// scanCase is one scan and the rows and cells it must return.
type scanCase struct {
	name     string
	rs       client.RowSet
	opts     []client.ReadOption
	from, to int                          // expected rows: scanKey(from) … scanKey(to-1)
	cells    func(row string) []cell.Cell // expected cells of each row
}

var scanCases = []scanCase{
	{name: "all rows", rs: client.NewRange(nil, nil), from: 0, to: scanRows, cells: scanCells},
	{
		name: "range, family a, newest version, limit 1000",
		rs:   client.NewRange([]byte(scanKey(250)), []byte(scanKey(2750))),
		opts: []client.ReadOption{
			client.WithFilter(rowfilter.Chain(rowfilter.Family("a"), rowfilter.CellsPerColumnLimit(1))),
			client.LimitRows(1000),
		},
		from: 250, to: 1250,
		cells: func(row string) []cell.Cell { return scanCells(row)[:1] },
	},
	{
		name: "from r02500, limit 400",
		rs:   client.InfiniteRange([]byte(scanKey(2500))),
		opts: []client.ReadOption{client.LimitRows(400)},
		from: 2500, to: 2900, cells: scanCells,
	},
	{
		name: "prefix r014, family b",
		rs:   client.PrefixRange([]byte("r014")),
		opts: []client.ReadOption{client.WithFilter(rowfilter.Family("b"))},
		from: 1400, to: 1500,
		cells: func(row string) []cell.Cell { return scanCells(row)[2:] },
	},
}

// check runs the scan and compares its result with the expectation.
func (sc scanCase) check(tbl *client.Table) error {
	rows, err := scan(tbl, sc.rs, sc.opts...)
	if err != nil {
		return err
	}
	if len(rows) != sc.to-sc.from {
		first, last := "", ""
		if len(rows) > 0 {
			first, last = string(rows[0].Key), string(rows[len(rows)-1].Key)
		}
		return fmt.Errorf("got %d rows (%s … %s), want %d (%s … %s)", len(rows), first, last,
			sc.to-sc.from, scanKey(sc.from), scanKey(sc.to-1))
	}
	for i, r := range rows {
		row := scanKey(sc.from + i)
		if string(r.Key) != row {
			return fmt.Errorf("row %d is %q, want %q", i, r.Key, row)
		}
		want := sc.cells(row)
		if !sameCells(r.Cells, want) {
			return fmt.Errorf("row %q: cells %s, want %s", row, formatCells(r.Cells), formatCells(want))
		}
	}
	return nil
}

func sameCells(got, want []cell.Cell) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Family != w.Family || !bytes.Equal(g.Qualifier, w.Qualifier) || g.Timestamp != w.Timestamp || !bytes.Equal(g.Value, w.Value) {
			return false
		}
	}
	return true
}

// TestScanAcrossTabletsWhileTabletsMove: range scans over 10 tablets on 3
// servers, with and without filters and row limits, return exactly the
// expected rows in key order while the master splits tablets, a tablet
// server is killed (its tablets fail over), a new server joins and the
// master balances tablets onto it.
func TestScanAcrossTabletsWhileTabletsMove(t *testing.T) {
	slow(t)
	rng := newRand(t)
	// The automatic balancer off: the test's own Balance call must find the
	// new server empty.
	c := startCluster(t, clusterOptions{masterArgs: []string{"--balance-interval", "0"}})
	cl := c.newClient(t)
	const table = "scan"
	var splits []string
	for i := 300; i < scanRows; i += 300 {
		splits = append(splits, scanKey(i))
	}
	ts := createTable(t, c, cl, table, splits, "a", "b")
	servers := map[string]bool{}
	for _, tb := range ts {
		servers[tb.Server] = true
	}
	if len(ts) < 8 || len(servers) != 3 {
		t.Fatalf("want ≥8 tablets over 3 servers, have %d over %d:\n%s", len(ts), len(servers), formatTablets(ts))
	}
	tbl := cl.Open(table)

	// Load with ApplyBulk, 300 rows a call.
	for lo := 0; lo < scanRows; lo += 300 {
		var rows [][]byte
		var muts []*client.Mutation
		for i := lo; i < lo+300; i++ {
			row := scanKey(i)
			m := client.NewMutation()
			for _, ce := range scanCells(row) {
				m.Set(ce.Family, ce.Qualifier, ce.Timestamp, ce.Value)
			}
			rows, muts = append(rows, []byte(row)), append(muts, m)
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		errs, err := tbl.ApplyBulk(ctx, rows, muts)
		cancel()
		if err != nil {
			t.Fatalf("ApplyBulk rows %d…: %v", lo, err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("ApplyBulk row %q: %v", rows[i], e)
			}
		}
	}
	for _, sc := range scanCases {
		if err := sc.check(tbl); err != nil {
			t.Fatalf("before any move, scan %q: %v", sc.name, err)
		}
	}

	// Scanners run every case in turn until the moves are done.
	var (
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		scans   atomic.Int64
		mu      sync.Mutex
		phase   = "start"
		scanErr []string
	)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sc := scanCases[i%len(scanCases)]
				err := sc.check(tbl)
				scans.Add(1)
				if err != nil {
					mu.Lock()
					scanErr = append(scanErr, fmt.Sprintf("during %s, scan %q: %v", phase, sc.name, err))
					mu.Unlock()
				}
			}
		}()
	}
	stopScanners := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer stopScanners()
	setPhase := func(p string) {
		mu.Lock()
		phase = p
		mu.Unlock()
		t.Logf("phase: %s (%d scans so far)", p, scans.Load())
	}
	// awaitScans lets the scanners run at least n more scans.
	awaitScans := func(n int64) {
		target := scans.Load() + n
		deadline := time.Now().Add(60 * time.Second)
		for scans.Load() < target && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if scans.Load() < target {
			t.Errorf("scanners made no progress for 60s during %s", phase)
		}
	}
	admin := func(what string, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := f(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	awaitScans(4)
	setPhase("split at r01450")
	admin("SplitTablet r01450", func(ctx context.Context) error { return cl.Admin().SplitTablet(ctx, table, []byte("r01450")) })
	c.waitAssigned(t, cl, table, 30*time.Second)
	awaitScans(4)

	victim, _ := pickVictim(t, c, c.waitAssigned(t, cl, table, 10*time.Second), rng)
	setPhase("kill -9 " + victim.name)
	victim.kill()
	c.waitAssigned(t, cl, table, 30*time.Second)
	awaitScans(4)

	setPhase("new server joins, balance")
	c.addServer(t)
	c.waitServers(t, c.liveServerIDs()...)
	var moved int
	admin("Balance", func(ctx context.Context) (err error) { moved, err = cl.Admin().Balance(ctx); return err })
	t.Logf("Balance moved %d tablets", moved)
	if moved == 0 {
		t.Errorf("Balance moved nothing although a new server holds no tablets")
	}
	after := c.waitAssigned(t, cl, table, 30*time.Second)
	awaitScans(4)

	setPhase("split at r00150")
	admin("SplitTablet r00150", func(ctx context.Context) error { return cl.Admin().SplitTablet(ctx, table, []byte("r00150")) })
	after = c.waitAssigned(t, cl, table, 30*time.Second)
	awaitScans(4)
	stopScanners()

	t.Logf("%d scans while tablets moved; %d tablets at the end:\n%s", scans.Load(), len(after), formatTablets(after))
	if len(after) != len(ts)+2 {
		t.Errorf("%d tablets after two splits of %d; want %d", len(after), len(ts), len(ts)+2)
	}
	for i, e := range scanErr {
		if i == 10 {
			t.Errorf("... and %d more failed scans", len(scanErr)-10)
			break
		}
		t.Error(e)
	}
	for _, sc := range scanCases {
		if err := sc.check(tbl); err != nil {
			t.Errorf("after the moves, scan %q: %v", sc.name, err)
		}
	}
}
