package convert

import (
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// CellsToProtoRow converts one row's cells (all of row, in read order) to
// a Row message. The cells' Row fields are not consulted.
func CellsToProtoRow(row []byte, cells []cell.Cell) *tabulapb.Row {
	r := &tabulapb.Row{Key: row, Cells: make([]*tabulapb.Cell, len(cells))}
	slab := make([]tabulapb.Cell, len(cells)) // one allocation for all cells
	for i := range cells {
		c, pc := &cells[i], &slab[i]
		pc.Family, pc.Qualifier, pc.TimestampMicros, pc.Value = c.Family, c.Qualifier, c.Timestamp, c.Value
		pc.Labels = c.Labels
		r.Cells[i] = pc
	}
	return r
}

// CellsFromProtoRow converts a Row message to cells, each carrying the
// row's key (and its labels, if a filter labelled it). A nil element is skipped.
func CellsFromProtoRow(r *tabulapb.Row) []cell.Cell {
	key := r.GetKey()
	out := make([]cell.Cell, 0, len(r.GetCells()))
	for _, c := range r.GetCells() {
		if c == nil {
			continue
		}
		out = append(out, cell.Cell{Row: key, Family: c.GetFamily(), Qualifier: c.GetQualifier(),
			Timestamp: c.GetTimestampMicros(), Value: c.GetValue(), Labels: c.GetLabels()})
	}
	return out
}
