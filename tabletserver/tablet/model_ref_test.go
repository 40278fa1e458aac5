package tablet

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"sort"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// This file is the reference model of the model-based test: a plain
// in-memory store written to be obviously right rather than fast.
//
// Every mutation gets an order number (batch number × 1024 + index in the
// batch), so "written before" is simply a smaller order. Reads resolve by
// docs/CONTRACTS.md §1: a delete hides only what was written before it, whatever
// the timestamps; a write of the same (row, column, timestamp) replaces the
// older one; then the family's GC policy condemns by rank among the visible
// versions of a column (newest timestamp first) and by age. In an aggregate
// family every input of a (row, column, timestamp) is kept, and a read
// merges the visible ones into one cell.

type refCell struct {
	ord   uint64
	value []byte
}

type refTomb struct {
	ord        uint64
	start, end int64 // [start, end); end 0 = unbounded
}

type refColumn struct {
	cells map[int64]refCell // by timestamp: the latest write only
	// parts holds an aggregate family's inputs by timestamp, every one.
	parts map[int64][]refCell
	tombs []refTomb
}

type refFamily struct {
	famTomb uint64 // order of the latest family tombstone; 0 = none
	cols    map[string]*refColumn
}

type refModel struct {
	rows   map[string]map[string]*refFamily // row → family → data
	fams   map[string]families.Family
	batch  uint64
	cursor uint64 // order of the last mutation given out
}

func newRefModel(fams []families.Family) *refModel {
	m := &refModel{rows: map[string]map[string]*refFamily{}}
	m.setFamilies(fams)
	return m
}

func (m *refModel) setFamilies(fams []families.Family) {
	m.fams = map[string]families.Family{}
	for _, f := range fams {
		m.fams[f.Name] = f
	}
}

func (m *refModel) famNames() []string {
	var out []string
	for n := range m.fams {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (m *refModel) family(row, fam string) *refFamily {
	r := m.rows[row]
	if r == nil {
		r = map[string]*refFamily{}
		m.rows[row] = r
	}
	f := r[fam]
	if f == nil {
		f = &refFamily{cols: map[string]*refColumn{}}
		r[fam] = f
	}
	return f
}

func (f *refFamily) column(q string) *refColumn {
	c := f.cols[q]
	if c == nil {
		c = &refColumn{cells: map[int64]refCell{}, parts: map[int64][]refCell{}}
		f.cols[q] = c
	}
	return c
}

// apply applies one row's mutations in order; now stamps server timestamps.
func (m *refModel) apply(row string, muts []cell.Mutation, now int64) {
	m.batch++
	for i, mu := range muts {
		ord := m.batch*1024 + uint64(i) + 1
		m.cursor = ord
		switch mu.Kind {
		case cell.SetCell:
			ts := mu.Timestamp
			if ts == cell.ServerTimestamp {
				ts = now
			}
			m.family(row, mu.Family).column(string(mu.Qualifier)).cells[ts] = refCell{ord: ord, value: bytes.Clone(mu.Value)}
		case cell.AddToCell, cell.MergeToCell:
			c := m.family(row, mu.Family).column(string(mu.Qualifier))
			c.parts[mu.Timestamp] = append(c.parts[mu.Timestamp], refCell{ord: ord, value: bytes.Clone(mu.Value)})
		case cell.DeleteColumn:
			c := m.family(row, mu.Family).column(string(mu.Qualifier))
			c.tombs = append(c.tombs, refTomb{ord: ord, start: mu.TimeStart, end: mu.TimeEnd})
		case cell.DeleteFamily:
			m.family(row, mu.Family).famTomb = ord
		case cell.DeleteRow:
			for _, n := range m.famNames() {
				m.family(row, n).famTomb = ord
			}
		}
	}
}

// refCondemned is the GC rule of docs/CONTRACTS.md §1, written out
// independently of families.Policy: the nested rule when the family has
// one, else versions and ttl combined by gc.
func refCondemned(f families.Family, now, ts int64, rank int) bool {
	if f.GCRule != nil {
		return refRuleCondemned(f.GCRule, now, ts, rank)
	}
	versions := f.MaxVersions > 0 && rank >= f.MaxVersions
	expired := f.TTL > 0 && ts < now-f.TTL.Microseconds()
	switch {
	case f.MaxVersions > 0 && f.TTL > 0:
		if f.GC == families.GCIntersection {
			return versions && expired
		}
		return versions || expired
	case f.MaxVersions > 0:
		return versions
	case f.TTL > 0:
		return expired
	}
	return false
}

// refRuleCondemned evaluates a nested rule by its definition: a union
// condemns what any child does, an intersection what every child does (an
// empty one nothing).
func refRuleCondemned(r *families.GCRule, now, ts int64, rank int) bool {
	switch r.Kind {
	case families.RuleMaxVersions:
		return rank >= r.MaxVersions
	case families.RuleMaxAge:
		return ts < now-r.MaxAge.Microseconds()
	case families.RuleUnion:
		for _, c := range r.Rules {
			if refRuleCondemned(c, now, ts, rank) {
				return true
			}
		}
	case families.RuleIntersection:
		for _, c := range r.Rules {
			if !refRuleCondemned(c, now, ts, rank) {
				return false
			}
		}
		return len(r.Rules) > 0
	}
	return false
}

// visible returns the column's live cells, newest timestamp first, with
// their ranks; condemned ones are flagged.
type refVisible struct {
	ts        int64
	value     []byte
	condemned bool
	aggregate bool // merged from parts
}

func (m *refModel) columnCells(fd *refFamily, c *refColumn, f families.Family, now int64) []refVisible {
	var out []refVisible
	live := func(ts int64, rc refCell) bool {
		if rc.ord < fd.famTomb {
			return false
		}
		for _, tb := range c.tombs {
			if tb.ord > rc.ord && ts >= tb.start && (tb.end == 0 || ts < tb.end) {
				return false
			}
		}
		return true
	}
	for ts, rc := range c.cells {
		if live(ts, rc) {
			out = append(out, refVisible{ts: ts, value: rc.value})
		}
	}
	for ts, parts := range c.parts {
		var acc int64
		n := 0
		for _, p := range parts {
			if !live(ts, p) {
				continue
			}
			v := int64(binary.BigEndian.Uint64(p.value))
			switch {
			case n == 0:
				acc = v
			case f.ValueType == families.Sum:
				acc += v
			case f.ValueType == families.Min && v < acc, f.ValueType == families.Max && v > acc:
				acc = v
			}
			n++
		}
		if n > 0 {
			out = append(out, refVisible{ts: ts, value: binary.BigEndian.AppendUint64(nil, uint64(acc)), aggregate: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ts > out[j].ts })
	for i := range out {
		out[i].condemned = refCondemned(f, now, out[i].ts, i)
	}
	return out
}

// read returns what a reader sees of the row at clock now.
func (m *refModel) read(row string, now int64) []cell.Cell {
	r := m.rows[row]
	var out []cell.Cell
	for _, fn := range m.famNames() {
		fd := r[fn]
		if fd == nil {
			continue
		}
		var qs []string
		for q := range fd.cols {
			qs = append(qs, q)
		}
		sort.Strings(qs)
		for _, q := range qs {
			for _, v := range m.columnCells(fd, fd.cols[q], m.fams[fn], now) {
				if !v.condemned {
					out = append(out, cell.Cell{Row: []byte(row), Family: fn, Qualifier: []byte(q), Timestamp: v.ts, Value: v.value})
				}
			}
		}
	}
	return out
}

// gc does what a major compaction does to family fam of the rows in
// [start, end): keep only the visible, uncondemned cells; drop tombstones.
func (m *refModel) gc(fam string, start, end []byte, now int64) {
	f, ok := m.fams[fam]
	if !ok {
		return
	}
	for row, r := range m.rows {
		if !inRowRange([]byte(row), start, end) {
			continue
		}
		fd := r[fam]
		if fd == nil {
			continue
		}
		nf := &refFamily{cols: map[string]*refColumn{}}
		for q, c := range fd.cols {
			for _, v := range m.columnCells(fd, c, f, now) {
				switch {
				case v.condemned:
				case v.aggregate:
					// One part: the merged value, written after every
					// part (deletes order against the newest part, the
					// only sequence number a merged cell keeps; no delete
					// falls between parts once tombstones are gone).
					var last uint64
					for _, p := range c.parts[v.ts] {
						last = max(last, p.ord)
					}
					nf.column(q).parts[v.ts] = []refCell{{ord: last, value: v.value}}
				default:
					nf.column(q).cells[v.ts] = c.cells[v.ts]
				}
			}
		}
		r[fam] = nf
	}
}

func inRowRange(row, start, end []byte) bool {
	return (start == nil || bytes.Compare(row, start) >= 0) && (end == nil || bytes.Compare(row, end) < 0)
}

// rows returns the model's row keys in [start, end), sorted.
func (m *refModel) rowKeys(start, end []byte) []string {
	var out []string
	for r := range m.rows {
		if inRowRange([]byte(r), start, end) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// rmw computes a ReadModifyWrite as the engine documents it: rules apply in
// order to the newest visible cell of each column; the new timestamp is now
// or the old cell's when later. ok is false when an increment meets a value
// that is not 8 bytes (nothing is written then).
func (m *refModel) rmw(row string, rules []cell.ReadModifyWriteRule, now int64) (out []cell.Cell, ok bool) {
	cur := m.read(row, now)
	type key struct{ f, q string }
	newest := map[key]cell.Cell{}
	for _, c := range cur {
		k := key{c.Family, string(c.Qualifier)}
		if _, seen := newest[k]; !seen {
			newest[k] = c
		}
	}
	results := map[key]cell.Cell{}
	for _, r := range rules {
		k := key{r.Family, string(r.Qualifier)}
		old, have := results[k]
		if !have {
			old, have = newest[k]
		}
		c := cell.Cell{Row: []byte(row), Family: r.Family, Qualifier: r.Qualifier, Timestamp: now}
		if have && old.Timestamp > now {
			c.Timestamp = old.Timestamp
		}
		if r.Kind == cell.Increment {
			var n int64
			if have {
				if len(old.Value) != 8 {
					return nil, false
				}
				n = int64(binary.BigEndian.Uint64(old.Value))
			}
			c.Value = binary.BigEndian.AppendUint64(nil, uint64(n+r.IncrementAmount))
		} else {
			c.Value = append(bytes.Clone(old.Value), r.AppendValue...)
		}
		results[k] = c
	}
	for _, c := range results {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return cell.Compare(&out[i], &out[j]) < 0 })
	var muts []cell.Mutation
	for _, c := range out {
		muts = append(muts, cell.Mutation{Kind: cell.SetCell, Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
	}
	m.apply(row, muts, now)
	return out, true
}

// refFilter is the model's version of the few rowfilter kinds the test
// uses; the filters are built by the test from this description.
type refFilter struct {
	family     string // "" = any
	qStart     []byte // with qRange: [qStart, qEnd), qEnd nil = unbounded
	qEnd       []byte
	qRange     bool
	tsStart    int64 // with tsRange
	tsEnd      int64
	tsRange    bool
	perColumn  int    // 0 = no limit
	valueRegex string // "" = none
	label      string // "" = none: the chain's output is labelled
	sinkFamily string // "" = none: this family's cells also go, labelled "sunk", to the output through a sink
}

func (f *refFilter) apply(cells []cell.Cell) []cell.Cell {
	out := f.applyChain(cells)
	if f.label != "" {
		for i := range out {
			out[i].Labels = []string{f.label}
		}
	}
	if f.sinkFamily != "" {
		// The sink's copies come after the chain's equal cells.
		for _, c := range cells {
			if c.Family == f.sinkFamily {
				c.Labels = []string{"sunk"}
				out = append(out, c)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return cell.Compare(&out[i], &out[j]) < 0 })
	}
	return out
}

func (f *refFilter) applyChain(cells []cell.Cell) []cell.Cell {
	var out []cell.Cell
	var re *regexp.Regexp
	if f.valueRegex != "" {
		re = regexp.MustCompile("^(?:" + f.valueRegex + ")$")
	}
	for _, c := range cells {
		if f.family != "" && c.Family != f.family {
			continue
		}
		if f.qRange && (bytes.Compare(c.Qualifier, f.qStart) < 0 || (f.qEnd != nil && bytes.Compare(c.Qualifier, f.qEnd) >= 0)) {
			continue
		}
		if f.tsRange && (c.Timestamp < f.tsStart || (f.tsEnd != 0 && c.Timestamp >= f.tsEnd)) {
			continue
		}
		if re != nil && !re.Match(c.Value) {
			continue
		}
		out = append(out, c)
	}
	if f.perColumn > 0 {
		var kept []cell.Cell
		n := 0
		for i, c := range out {
			if i > 0 && c.Family == out[i-1].Family && bytes.Equal(c.Qualifier, out[i-1].Qualifier) {
				n++
			} else {
				n = 0
			}
			if n < f.perColumn {
				kept = append(kept, c)
			}
		}
		out = kept
	}
	return out
}
