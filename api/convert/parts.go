package convert

import (
	"bytes"
	"fmt"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// Rows larger than one message. A read answer carries whole rows while they
// are small; a row whose cells pass a budget is sent in parts (Row.continued
// on every part but the last), and a value larger than a part in pieces
// (Cell.value_continues on every piece but the last, the next piece being
// the first cell of the next part). Any row that can be written can so be
// read, whatever gRPC's message limit.

// cellOverhead approximates the encoded bytes of a cell besides its
// family, qualifier and value.
const cellOverhead = 24

// minPiece is the smallest value piece a part takes, so that a part always
// makes progress however long the family and qualifier are.
const minPiece = 4 << 10

// RowSize approximates the encoded size of r.
func RowSize(r *tabulapb.Row) int {
	n := len(r.GetKey())
	for _, c := range r.GetCells() {
		n += len(c.GetFamily()) + len(c.GetQualifier()) + len(c.GetValue()) + cellOverhead
		for _, l := range c.GetLabels() {
			n += len(l) + 2
		}
	}
	return n
}

// CellsSize is RowSize of CellsToProtoRow(row, cells), without building
// the message.
func CellsSize(row []byte, cells []cell.Cell) int {
	n := len(row)
	for i := range cells {
		c := &cells[i]
		n += len(c.Family) + len(c.Qualifier) + len(c.Value) + cellOverhead
		for _, l := range c.Labels {
			n += len(l) + 2
		}
	}
	return n
}

// SplitRow returns r as parts of about budget bytes each (r itself when it
// fits).
func SplitRow(r *tabulapb.Row, budget int) []*tabulapb.Row {
	if RowSize(r) <= budget {
		return []*tabulapb.Row{r}
	}
	var parts []*tabulapb.Row
	cur := &tabulapb.Row{Key: r.Key}
	size := len(r.Key)
	flush := func() {
		cur.Continued = true
		parts = append(parts, cur)
		cur = &tabulapb.Row{Key: r.Key}
		size = len(r.Key)
	}
	for _, c := range r.Cells {
		v := c.Value
		head := len(c.Family) + len(c.Qualifier) + cellOverhead
		labels := c.Labels // on the first piece only
		for _, l := range labels {
			head += len(l) + 2
		}
		for {
			room := budget - size - head
			if room < minPiece && len(cur.Cells) > 0 {
				flush()
				continue
			}
			room = max(room, minPiece)
			piece := &tabulapb.Cell{Family: c.Family, Qualifier: c.Qualifier, TimestampMicros: c.TimestampMicros, Labels: labels}
			labels = nil
			if len(v) <= room {
				piece.Value = v
				cur.Cells = append(cur.Cells, piece)
				size += head + len(v)
				break
			}
			piece.Value, piece.ValueContinues = v[:room], true
			cur.Cells = append(cur.Cells, piece)
			v = v[room:]
			flush()
		}
	}
	return append(parts, cur)
}

// RowJoiner puts parts of rows back together, in stream order.
type RowJoiner struct {
	cur     *tabulapb.Row
	pending bool // cur's last cell's value continues
}

// Add takes the next row message of a stream and returns the whole row
// once its last part arrived (nil before). A part that does not continue
// the row being joined is an error.
func (j *RowJoiner) Add(p *tabulapb.Row) (*tabulapb.Row, error) {
	if j.cur == nil {
		if !p.GetContinued() && !hasContinuingCell(p) {
			return p, nil
		}
		j.cur = &tabulapb.Row{Key: p.GetKey()}
	} else if !bytes.Equal(j.cur.Key, p.GetKey()) {
		return nil, fmt.Errorf("convert: part of row %q arrived while row %q was incomplete", p.GetKey(), j.cur.Key)
	}
	for i, c := range p.GetCells() {
		if i == 0 && j.pending {
			last := j.cur.Cells[len(j.cur.Cells)-1]
			if c.GetFamily() != last.Family || !bytes.Equal(c.GetQualifier(), last.Qualifier) || c.GetTimestampMicros() != last.TimestampMicros {
				return nil, fmt.Errorf("convert: row %q: a value piece of another cell followed an unfinished value", p.GetKey())
			}
			last.Value = append(last.Value, c.GetValue()...)
			j.pending = c.GetValueContinues()
			continue
		}
		if j.pending {
			return nil, fmt.Errorf("convert: row %q: an unfinished value is followed by another cell", p.GetKey())
		}
		nc := &tabulapb.Cell{Family: c.GetFamily(), Qualifier: c.GetQualifier(), TimestampMicros: c.GetTimestampMicros(), Value: c.GetValue(), Labels: c.GetLabels()}
		if c.GetValueContinues() {
			nc.Value = bytes.Clone(nc.Value) // grows as pieces arrive
		}
		j.cur.Cells = append(j.cur.Cells, nc)
		j.pending = c.GetValueContinues()
	}
	if p.GetContinued() {
		return nil, nil
	}
	if j.pending {
		return nil, fmt.Errorf("convert: row %q ended inside a value", p.GetKey())
	}
	r := j.cur
	j.cur = nil
	return r, nil
}

// Pending reports whether a row is partly joined.
func (j *RowJoiner) Pending() bool { return j.cur != nil }

// Reset drops a partly joined row (its stream broke; the row is read again).
func (j *RowJoiner) Reset() { j.cur, j.pending = nil, false }

func hasContinuingCell(p *tabulapb.Row) bool {
	cs := p.GetCells()
	return len(cs) > 0 && cs[len(cs)-1].GetValueContinues()
}
