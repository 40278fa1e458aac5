package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var (
	seedFlag = flag.Uint64("seed", 0, "seed of the randomized differential test (0: from the clock)")
	opsFlag  = flag.Int("diff-ops", 400, "operations per differential run")
)

// TestDifferentialAgainstTheEmulator sends one random sequence of
// mutations, conditional mutations and filtered reads (forward and
// reversed) to Tabula's gateway
// and to Google's emulator (bttest, in process) through the official Go
// client, and requires identical answers. What it leaves out, and why, is
// where the two differ on purpose or where the emulator is not Bigtable
// (docs/GATEWAY.md "Differences"): family g is an int64 sum aggregate; GC rules (Tabula never returns a
// condemned cell; the emulator collects lazily), sinks (the emulator
// ignores them), row samples (random), cells-per-row limits and offsets
// over several families (the emulator walks families in map order), chains
// and interleaves of fewer than two filters (the emulator rejects them),
// labels together with strip_value (the emulator's strip drops labels), and
// server-assigned timestamps (read-modify-write results are compared by
// value).
func TestDifferentialAgainstTheEmulator(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	emu, err := bttest.NewServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	table := fmt.Sprintf("diff%d", seed%1_000_000)
	sides := []*side{newSide(t, "emulator", emu.Addr, table), newSide(t, "tabula", cluster.GatewayAddr(), table)}

	d := &differ{t: t, rng: rng, sides: sides}
	for i := 0; i < *opsFlag; i++ {
		d.step(i)
		if t.Failed() {
			t.Fatalf("stopped at op %d (seed %d)", i, seed)
		}
	}
	d.compareReads("final full scan", bigtable.InfiniteRange(""), nil)
}

// side is one server under test.
type side struct {
	name      string
	tbl, rmwT *bigtable.Table
}

func newSide(t *testing.T, name, addr, table string) *side {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := bigtable.NewClient(ctx, project, instance, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	a, err := bigtable.NewAdminClient(ctx, project, instance, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.DeleteTable(context.Background(), table)
		a.DeleteTable(context.Background(), table+"rmw")
		c.Close()
		conn.Close()
	})
	sum := bigtable.AggregateType{Input: bigtable.Int64Type{}, Aggregator: bigtable.SumAggregator{}}
	fams := map[string]bigtable.Family{"a": {GCPolicy: bigtable.NoGcPolicy()}, "b": {GCPolicy: bigtable.NoGcPolicy()},
		"g": {GCPolicy: bigtable.NoGcPolicy(), ValueType: sum}}
	for _, conf := range []*bigtable.TableConf{{TableID: table, SplitKeys: []string{"r3", "r6"}, ColumnFamilies: fams}, {TableID: table + "rmw", ColumnFamilies: fams}} {
		if err := a.CreateTableFromConf(ctx, conf); err != nil {
			t.Fatalf("%s: creating %s: %v", name, conf.TableID, err)
		}
	}
	return &side{name: name, tbl: c.Open(table), rmwT: c.Open(table + "rmw")}
}

type differ struct {
	t       *testing.T
	rng     *rand.Rand
	sides   []*side
	op      string
	history []string // every mutation sent, for the failure message
	last    string   // the last mutation() built, described
}

func (d *differ) row() string  { return fmt.Sprintf("r%d", d.rng.IntN(9)) }
func (d *differ) fam() string  { return []string{"a", "b"}[d.rng.IntN(2)] }
func (d *differ) qual() string { return fmt.Sprintf("q%d", d.rng.IntN(4)) }

// ts is a millisecond-aligned timestamp from a small set, so versions
// collide and deletes by range hit.
func (d *differ) ts() bigtable.Timestamp { return bigtable.Timestamp((1 + d.rng.IntN(6)) * 1000) }

func (d *differ) mutation() *bigtable.Mutation {
	m := bigtable.NewMutation()
	var desc []string
	defer func() { d.last = strings.Join(desc, "; ") }()
	for n := 1 + d.rng.IntN(3); n > 0; n-- {
		switch r := d.rng.IntN(23); {
		case r >= 20:
			// g is an int64 sum family: inputs to one cell merge.
			q, ts, v := d.qual(), d.ts(), int64(d.rng.IntN(21)-10)
			m.AddIntToCell("g", q, ts, v)
			desc = append(desc, fmt.Sprintf("add g:%s@%d %+d", q, ts, v))
		case r == 19 && d.rng.IntN(2) == 0:
			m.DeleteCellsInFamily("g")
			desc = append(desc, "delfam g")
		case r < 13:
			f, q, ts, v := d.fam(), d.qual(), d.ts(), fmt.Sprintf("v%d", d.rng.IntN(10))
			m.Set(f, q, ts, []byte(v))
			desc = append(desc, fmt.Sprintf("set %s:%s@%d=%s", f, q, ts, v))
		case r < 15:
			f, q := d.fam(), d.qual()
			m.DeleteCellsInColumn(f, q)
			desc = append(desc, fmt.Sprintf("delcol %s:%s", f, q))
		case r < 17:
			f, q, a := d.fam(), d.qual(), d.ts()
			b := a + bigtable.Timestamp(1000*(1+d.rng.IntN(3)))
			m.DeleteTimestampRange(f, q, a, b)
			desc = append(desc, fmt.Sprintf("delcol %s:%s[%d,%d)", f, q, a, b))
		case r < 19:
			f := d.fam()
			m.DeleteCellsInFamily(f)
			desc = append(desc, "delfam "+f)
		default:
			m.DeleteRow()
			desc = append(desc, "delrow")
		}
	}
	return m
}

func (d *differ) step(i int) {
	ctx := testContext(d.t)
	switch r := d.rng.IntN(100); {
	case r < 40:
		row, m := d.row(), d.mutation()
		d.op = fmt.Sprintf("op %d: Apply(%s)", i, row)
		d.history = append(d.history, fmt.Sprintf("%s [%s]", d.op, d.last))
		d.same(func(s *side) string { return errString(s.tbl.Apply(ctx, row, m)) })
	case r < 50:
		n := 1 + d.rng.IntN(4)
		rows, muts := make([]string, n), make([]*bigtable.Mutation, n)
		var descs []string
		for j := range rows {
			// Distinct rows: the order in which MutateRows applies two
			// entries of one row is unspecified, in Bigtable and in Tabula.
			for rows[j] = d.row(); slices.Contains(rows[:j], rows[j]); rows[j] = d.row() {
			}
			muts[j] = d.mutation()
			descs = append(descs, rows[j]+": "+d.last)
		}
		d.op = fmt.Sprintf("op %d: ApplyBulk(%v)", i, rows)
		d.history = append(d.history, fmt.Sprintf("op %d: ApplyBulk [%s]", i, strings.Join(descs, " | ")))
		d.same(func(s *side) string {
			errs, err := s.tbl.ApplyBulk(ctx, rows, muts)
			return fmt.Sprint(len(errs), errString(err))
		})
	case r < 60:
		row, f := d.row(), d.filter(2)
		var pred bigtable.Filter
		if d.rng.IntN(4) > 0 {
			pred = f
		}
		mt := d.mutation()
		tdesc := d.last
		mf := d.mutation()
		fdesc := d.last
		if d.rng.IntN(4) == 0 {
			mf, fdesc = nil, "none"
		}
		d.op = fmt.Sprintf("op %d: CheckAndMutate(%s, %v)", i, row, pred)
		d.history = append(d.history, fmt.Sprintf("%s true [%s] false [%s]", d.op, tdesc, fdesc))
		d.same(func(s *side) string {
			var matched bool
			err := s.tbl.Apply(ctx, row, bigtable.NewCondMutation(pred, mt, mf), bigtable.GetCondMutationResult(&matched))
			return fmt.Sprint(matched, errString(err))
		})
	case r < 65:
		row := d.row()
		rmw := bigtable.NewReadModifyWrite()
		rmw.Increment(d.fam(), "n", int64(d.rng.IntN(200)-100))
		rmw.AppendValue(d.fam(), "s", []byte{byte('a' + d.rng.IntN(26))})
		d.op = fmt.Sprintf("op %d: ReadModifyWrite(%s)", i, row)
		d.same(func(s *side) string {
			r, err := s.rmwT.ApplyReadModifyWrite(ctx, row, rmw)
			return renderValues(r) + errString(err)
		})
		d.same(func(s *side) string { return strings.Join(readValues(d.t, s.rmwT), "\n") })
	default:
		rs := d.rowSet()
		f := d.filter(3)
		var opts []bigtable.ReadOption
		if f != nil {
			opts = append(opts, bigtable.RowFilter(f))
		}
		if d.rng.IntN(4) == 0 {
			opts = append(opts, bigtable.LimitRows(int64(1+d.rng.IntN(4))))
		}
		dir := ""
		if d.rng.IntN(4) == 0 {
			opts = append(opts, bigtable.ReverseScan())
			dir = ", reversed"
		}
		d.compareReads(fmt.Sprintf("op %d: ReadRows(%v, %v%s)", i, rs, f, dir), rs, opts)
	}
}

func (d *differ) compareReads(op string, rs bigtable.RowSet, opts []bigtable.ReadOption) {
	d.op = op
	d.same(func(s *side) string {
		var rows []string
		err := s.tbl.ReadRows(testContext(d.t), rs, func(r bigtable.Row) bool {
			rows = append(rows, canonical(r))
			return true
		}, opts...)
		return strings.Join(rows, "\n") + errString(err)
	})
}

// same runs f on every side and requires equal answers.
func (d *differ) same(f func(*side) string) {
	d.t.Helper()
	want := f(d.sides[0])
	for _, s := range d.sides[1:] {
		if got := f(s); got != want {
			d.t.Errorf("%s: lines that differ\n%s\nmutations so far:\n%s", d.op, lineDiff(d.sides[0].name, want, s.name, got), strings.Join(d.history, "\n"))
		}
	}
}

func errString(err error) string {
	if err != nil {
		return " error"
	}
	return ""
}

func (d *differ) rowSet() bigtable.RowSet {
	key := func() string { return fmt.Sprintf("r%d", d.rng.IntN(10)) }
	rng := func() bigtable.RowRange {
		a, b := key(), key()
		if b < a {
			a, b = b, a
		}
		switch d.rng.IntN(6) {
		case 0:
			return bigtable.NewRange(a, b)
		case 1:
			return bigtable.NewClosedRange(a, b)
		case 2:
			return bigtable.NewOpenRange(a, b)
		case 3:
			return bigtable.NewOpenClosedRange(a, b)
		case 4:
			return bigtable.InfiniteRange(a)
		}
		return bigtable.PrefixRange(a)
	}
	switch d.rng.IntN(4) {
	case 0:
		return bigtable.InfiniteRange("")
	case 1:
		return bigtable.RowList{key(), key(), key()}
	case 2:
		return rng()
	}
	return bigtable.RowRangeList{rng(), rng()}
}

// filter builds a random filter tree of at most depth levels, or nil.
// Labels go only on the branches of an interleave, never with strip_value.
func (d *differ) filter(depth int) bigtable.Filter {
	if d.rng.IntN(6) == 0 {
		return nil
	}
	if d.rng.IntN(5) == 0 {
		return bigtable.InterleaveFilters(
			bigtable.ChainFilters(d.node(depth-1, false), bigtable.LabelFilter("left")),
			bigtable.ChainFilters(d.node(depth-1, false), bigtable.LabelFilter("right")))
	}
	return d.node(depth, true)
}

func (d *differ) node(depth int, strip bool) bigtable.Filter {
	if depth > 0 && d.rng.IntN(3) == 0 {
		switch d.rng.IntN(3) {
		case 0:
			return bigtable.ChainFilters(d.node(depth-1, strip), d.node(depth-1, strip))
		case 1:
			return bigtable.InterleaveFilters(d.node(depth-1, strip), d.node(depth-1, strip))
		}
		var t, f bigtable.Filter
		if d.rng.IntN(4) > 0 {
			t = d.node(depth-1, strip)
		}
		if d.rng.IntN(4) > 0 {
			f = d.node(depth-1, strip)
		}
		return bigtable.ConditionFilter(d.node(depth-1, strip), t, f)
	}
	for {
		switch d.rng.IntN(15) {
		case 0:
			return bigtable.PassAllFilter()
		case 1:
			return bigtable.BlockAllFilter()
		case 2:
			return bigtable.RowKeyFilter([]string{"r[0-4]", "r.", ".*[13579]", "r5"}[d.rng.IntN(4)])
		case 3:
			return bigtable.FamilyFilter([]string{"a", "b", "a|b", "[ab]x"}[d.rng.IntN(4)])
		case 4:
			return bigtable.ColumnFilter([]string{"q0", "q[12]", "q.*", "n|s"}[d.rng.IntN(4)])
		case 5:
			return bigtable.ValueFilter([]string{"v[0-4]", "v1", ".*[5-9]", ""}[d.rng.IntN(4)])
		case 6:
			return bigtable.LatestNFilter(1 + d.rng.IntN(3))
		case 7:
			a := d.ts()
			return bigtable.TimestampRangeFilterMicros(a, a+bigtable.Timestamp(1000*d.rng.IntN(4)))
		case 8:
			return bigtable.ColumnRangeFilter(d.fam(), fmt.Sprintf("q%d", d.rng.IntN(3)), fmt.Sprintf("q%d", 1+d.rng.IntN(4)))
		case 9:
			return bigtable.ValueRangeFilter([]byte(fmt.Sprintf("v%d", d.rng.IntN(5))), []byte(fmt.Sprintf("v%d", 3+d.rng.IntN(7))))
		case 10:
			// Row-level counts over one family: the emulator walks
			// families in map order.
			return bigtable.ChainFilters(bigtable.FamilyFilter(d.fam()), bigtable.CellsPerRowLimitFilter(1+d.rng.IntN(4)))
		case 11:
			return bigtable.ChainFilters(bigtable.FamilyFilter(d.fam()), bigtable.CellsPerRowOffsetFilter(d.rng.IntN(4)))
		case 12:
			if strip {
				return bigtable.StripValueFilter()
			}
		case 13:
			return bigtable.ValueRangeFilter(nil, []byte(fmt.Sprintf("v%d", d.rng.IntN(10))))
		case 14:
			return bigtable.ColumnRangeFilter(d.fam(), "", fmt.Sprintf("q%d", d.rng.IntN(4)))
		}
	}
}

// canonical renders a row with each column's cells sorted (timestamp
// descending, then value and labels): interleaves may emit equal cells in
// either order.
func canonical(r bigtable.Row) string {
	var out []string
	for _, fam := range sortedFamilies(r) {
		items := slices.Clone(r[fam])
		slices.SortStableFunc(items, func(a, b bigtable.ReadItem) int {
			if c := strings.Compare(a.Column, b.Column); c != 0 {
				return c
			}
			if a.Timestamp != b.Timestamp {
				return int(b.Timestamp - a.Timestamp)
			}
			if c := strings.Compare(string(a.Value), string(b.Value)); c != 0 {
				return c
			}
			return strings.Compare(strings.Join(a.Labels, ","), strings.Join(b.Labels, ","))
		})
		for _, it := range items {
			out = append(out, fmt.Sprintf("%s@%d=%q%v", it.Column, it.Timestamp, it.Value, it.Labels))
		}
	}
	return r.Key() + ": " + strings.Join(out, " ")
}

// renderValues renders a row's cells without timestamps (the servers'
// clocks assign them).
func renderValues(r bigtable.Row) string {
	var out []string
	for _, fam := range sortedFamilies(r) {
		for _, it := range r[fam] {
			out = append(out, fmt.Sprintf("%s=%q", it.Column, it.Value))
		}
	}
	return strings.Join(out, " ")
}

func readValues(t *testing.T, tbl *bigtable.Table) []string {
	var rows []string
	err := tbl.ReadRows(testContext(t), bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
		rows = append(rows, r.Key()+": "+renderValues(r))
		return true
	}, bigtable.RowFilter(bigtable.LatestNFilter(1)))
	if err != nil {
		rows = append(rows, "error")
	}
	return rows
}

// lineDiff lists the lines of a and b that the other lacks.
func lineDiff(an, a, bn, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, an+": "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, bn+": "+l)
		}
	}
	return strings.Join(out, "\n")
}
