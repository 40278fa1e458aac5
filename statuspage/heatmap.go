package statuspage

import (
	"bytes"
	"cmp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tabuladb/tabula/master"
)

// The heatmap of a table is a history of columns, one per load report:
// each column cuts the table's key space into cells and gives each cell
// its reads, writes and bytes per second. Tablets report their load and a
// few keys cutting their sampled accesses into equal parts (access
// quantiles), so a tablet's load is spread evenly over the sub-ranges its
// quantiles cut: a hot key range inside a big tablet shows as many thin,
// hot cells. Adjacent cells are merged, coldest pairs first, until a
// column has at most Rows cells.
//
// Memory is bounded whatever the cluster's size: at most Columns columns
// per table, at most Rows cells per column (fewer when many tables share
// the budget), keys cut to MaxKeyBytes and shared between columns, and at
// most MaxCells cells in all, the oldest columns of all tables dropped
// first. Reducing one report costs time linear in its tablets (sorting
// aside) and memory for one report's cells, freed at once.

// HeatmapOptions bound the heatmap history. Zero values mean the defaults.
type HeatmapOptions struct {
	// Columns is the history kept per table: 360 (an hour of 10s reports).
	Columns int
	// Rows is the most cells of one column: 256.
	Rows int
	// MinRows is the fewest cells a column is cut to when many tables
	// share MaxCells: 16.
	MinRows int
	// MaxCells bounds the cells of all tables together: 1<<18 (about
	// 30 MB at worst, 64-byte keys not shared; much less in practice).
	MaxCells int
	// MaxKeyBytes is how much of a key the heatmap keeps: 64.
	MaxKeyBytes int
}

func (o *HeatmapOptions) fill() {
	if o.Columns <= 0 {
		o.Columns = 360
	}
	if o.Rows <= 0 {
		o.Rows = 256
	}
	if o.MinRows <= 0 {
		o.MinRows = 16
	}
	o.MinRows = min(o.MinRows, o.Rows)
	if o.MaxCells <= 0 {
		o.MaxCells = 1 << 18
	}
	if o.MaxKeyBytes <= 0 {
		o.MaxKeyBytes = 64
	}
}

// Cell is one key range of a column: [Start, End), End "" meaning the end
// of the table, with its load per second.
type Cell struct {
	Start, End           string
	Reads, Writes, Bytes float32
}

// Column is one table's cells in one report, in key order.
type Column struct {
	At    time.Time
	Cells []Cell
}

// Heatmaps keeps the heatmap history of every table. Safe for concurrent
// use; Observe is meant for master.OnLoadReport.
type Heatmaps struct {
	opts HeatmapOptions

	mu     sync.Mutex
	tables map[string]*history
	order  []queued // every kept column, oldest first (to drop by age and budget)
	head   int      // order[:head] are dropped
	cells  int      // cells kept in all
	times  []time.Time
	// last is the last report reduced and lastCols its columns: a report
	// with the same tablets (an idle round of the master's delta reports)
	// reuses them instead of reducing every tablet again (at 100,000
	// tablets half of an idle master's CPU). reductions counts the reports
	// reduced (tests).
	last       *master.LoadReport
	lastCols   map[string][]Cell
	reductions int
}

type history struct {
	cols []Column
	keys map[string]string // the newest column's keys, to share with the next
}

type queued struct {
	table string
	at    time.Time
}

// NewHeatmaps returns an empty history.
func NewHeatmaps(opts HeatmapOptions) *Heatmaps {
	opts.fill()
	return &Heatmaps{opts: opts, tables: map[string]*history{}}
}

// Observe adds one column per table of rep.
func (h *Heatmaps) Observe(rep *master.LoadReport) {
	if rep == nil {
		return
	}
	h.mu.Lock()
	cols, same := h.lastCols, rep.SameTablets(h.last)
	h.mu.Unlock()
	if !same {
		cols = h.reduce(rep)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if !same {
		h.last, h.lastCols = rep, cols
		h.reductions++
	}
	h.times = append(h.times, rep.At)
	if len(h.times) > h.opts.Columns {
		h.times = h.times[len(h.times)-h.opts.Columns:]
	}
	for _, table := range slices.Sorted(mapKeys(cols)) {
		hist := h.tables[table]
		if hist == nil {
			hist = &history{}
			h.tables[table] = hist
		}
		cells := hist.share(cols[table])
		hist.cols = append(hist.cols, Column{At: rep.At, Cells: cells})
		h.order = append(h.order, queued{table: table, at: rep.At})
		h.cells += len(cells)
	}
	// Drop what is older than the last Columns reports, then the oldest
	// columns of all until the budget holds.
	oldest := h.times[0]
	for h.head < len(h.order) && (h.order[h.head].at.Before(oldest) || h.cells > h.opts.MaxCells) {
		h.dropOldest()
	}
	if h.head > len(h.order)/2 {
		h.order = slices.Clone(h.order[h.head:])
		h.head = 0
	}
}

// reduce cuts every table of rep into the cells of its column.
func (h *Heatmaps) reduce(rep *master.LoadReport) map[string][]Cell {
	byTable := map[string][]*master.TabletLoad{}
	for _, t := range rep.Tablets {
		byTable[t.Table] = append(byTable[t.Table], t)
	}
	rows := h.opts.Rows
	if n := len(byTable); n > 0 {
		rows = max(h.opts.MinRows, min(h.opts.Rows, h.opts.MaxCells/(h.opts.Columns*n)))
	}
	cols := make(map[string][]Cell, len(byTable))
	for table, ts := range byTable {
		cols[table] = Reduce(ts, rows, h.opts.MaxKeyBytes)
	}
	return cols
}

// dropOldest drops the oldest kept column (the oldest of its table).
func (h *Heatmaps) dropOldest() {
	q := h.order[h.head]
	h.head++
	hist := h.tables[q.table]
	if hist == nil || len(hist.cols) == 0 {
		return
	}
	h.cells -= len(hist.cols[0].Cells)
	hist.cols[0] = Column{}
	hist.cols = hist.cols[1:]
	if len(hist.cols) == 0 {
		delete(h.tables, q.table)
	}
}

// share makes cells use one copy of each key, the previous column's if it
// had it, so that a table whose tablets do not change keeps each key once.
func (hist *history) share(cells []Cell) []Cell {
	next := make(map[string]string, len(cells)+1)
	intern := func(k string) string {
		if s, ok := next[k]; ok {
			return s
		}
		if s, ok := hist.keys[k]; ok {
			k = s
		}
		next[k] = k
		return k
	}
	for i := range cells {
		cells[i].Start, cells[i].End = intern(cells[i].Start), intern(cells[i].End)
	}
	hist.keys = next
	return cells
}

// Columns returns the history of table, oldest first (a copy).
func (h *Heatmaps) Columns(table string) []Column {
	h.mu.Lock()
	defer h.mu.Unlock()
	hist := h.tables[table]
	if hist == nil {
		return nil
	}
	return slices.Clone(hist.cols)
}

// Cells returns how many cells are kept in all.
func (h *Heatmaps) Cells() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cells
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Reduce cuts one table's reported tablets into at most rows cells: each
// tablet at its access quantiles (its load spread evenly over the
// sub-ranges), then adjacent cells merged, coldest pairs first. Keys are
// cut to maxKey bytes.
func Reduce(tablets []*master.TabletLoad, rows, maxKey int) []Cell {
	ts := slices.Clone(tablets)
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i].Start, ts[j].Start) < 0 })
	cut := func(k []byte) string { return string(k[:min(len(k), maxKey)]) }
	// Cut each tablet at no more quantiles than the column has rows for:
	// with as many tablets as rows, the cuts would all be merged away
	// (at 100,000 tablets this saves most of the work).
	per := max(0, rows/max(1, len(ts))-1)
	n := 0
	for _, t := range ts {
		n += min(per, len(t.AccessQuantiles)) + 1
	}
	cells := make([]Cell, 0, n)
	for _, t := range ts {
		bounds := [][]byte{t.Start}
		for _, q := range pick(t.AccessQuantiles, per) {
			// Inside the tablet, ascending and distinct only: a
			// repeated key is a point the next sub-range starts with.
			if bytes.Compare(q, bounds[len(bounds)-1]) <= 0 || (len(t.End) > 0 && bytes.Compare(q, t.End) >= 0) {
				continue
			}
			bounds = append(bounds, q)
		}
		bounds = append(bounds, t.End)
		n := float32(len(bounds) - 1)
		r, w, b := float32(t.ReadsPerSec)/n, float32(t.WritesPerSec)/n, float32(t.ReadBytesPerSec+t.WriteBytesPerSec)/n
		for i := 0; i+1 < len(bounds); i++ {
			cells = append(cells, Cell{Start: cut(bounds[i]), End: cut(bounds[i+1]), Reads: r, Writes: w, Bytes: b})
		}
	}
	return mergeCells(cells, rows)
}

// pick returns at most n of the quantiles qs, evenly spaced: with k
// quantiles cutting k+1 equal parts, every (k+1)/(n+1)-th.
func pick(qs [][]byte, n int) [][]byte {
	if len(qs) <= n {
		return qs
	}
	out := make([][]byte, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, qs[i*(len(qs)+1)/(n+1)-1])
	}
	return out
}

// mergeCells merges adjacent cells until at most rows are left, the pairs
// with the least load first (load as the sum of each measure relative to
// its largest value, so that hot cells by any measure stay apart).
func mergeCells(cells []Cell, rows int) []Cell {
	rows = max(rows, 1)
	if len(cells) <= rows {
		return cells
	}
	var mr, mw, mb float32
	for _, c := range cells {
		mr, mw, mb = max(mr, c.Reads), max(mw, c.Writes), max(mb, c.Bytes)
	}
	score := make([]float32, len(cells))
	for i, c := range cells {
		score[i] = rel(c.Reads, mr) + rel(c.Writes, mw) + rel(c.Bytes, mb)
	}
	type pair struct {
		load float32
		i    int32
	}
	var pairs []pair
	var merge, taken []bool
	for len(cells) > rows {
		// One pass merges up to the excess of disjoint pairs, coldest
		// first; passes repeat until the column fits (each at least
		// about halves the excess).
		pairs = pairs[:0]
		for i := 0; i+1 < len(cells); i++ {
			pairs = append(pairs, pair{score[i] + score[i+1], int32(i)})
		}
		slices.SortFunc(pairs, func(a, b pair) int {
			if a.load != b.load {
				return cmp.Compare(a.load, b.load)
			}
			return cmp.Compare(a.i, b.i)
		})
		merge = append(merge[:0], make([]bool, len(cells))...) // merge[i]: cell i absorbs i+1
		taken = append(taken[:0], make([]bool, len(cells))...)
		excess := len(cells) - rows
		for _, p := range pairs {
			if excess == 0 {
				break
			}
			if i := p.i; !taken[i] && !taken[i+1] {
				merge[i], taken[i], taken[i+1] = true, true, true
				excess--
			}
		}
		n := 0
		for i := 0; i < len(cells); i++ {
			c, sc := cells[i], score[i]
			if merge[i] {
				next := cells[i+1]
				c.End = next.End
				c.Reads, c.Writes, c.Bytes = c.Reads+next.Reads, c.Writes+next.Writes, c.Bytes+next.Bytes
				sc += score[i+1]
				i++
			}
			cells[n], score[n] = c, sc
			n++
		}
		cells, score = cells[:n], score[:n]
	}
	return slices.Clone(cells) // not the whole input's array: a column keeps only its cells
}

func rel(v, m float32) float32 {
	if m == 0 {
		return 0
	}
	return v / m
}
