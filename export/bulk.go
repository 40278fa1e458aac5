package export

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// bulkChunkBytes bounds the rows of one BulkLoad call: each tablet's
// share of a call is published whole (docs/OPERATIONS.md "Bulk load"),
// and the call's rows are held in memory until it returns.
const bulkChunkBytes = 64 << 20

// bulkFile loads one file's rows (an export file holds one key range in
// key order) with client.Table.BulkLoad, in calls of up to bulkChunkBytes.
func (im *importer) bulkFile(ctx context.Context, name string, jr *JSONLinesReader) error {
	var (
		rows []client.Row
		size int
	)
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		st, err := im.tbl.BulkLoad(ctx, rows)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("bulk loading into %s: %s: rows %q to %q: %w (tablets whose share was loaded keep it; loading the file again is safe)",
				im.tbl.Name(), name, rows[0].Key, rows[len(rows)-1].Key, err)
		}
		im.rows.Add(st.Rows)
		im.cells.Add(st.Cells)
		im.bytes.Add(int64(size))
		if im.opts.Progress != nil {
			im.opts.Progress(st.Rows, st.Cells, int64(size))
		}
		rows, size = nil, 0
		return nil
	}
	for {
		row, err := jr.ReadRow()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		r := client.Row{Key: append([]byte(nil), row.Key...), Cells: make([]cell.Cell, len(row.Cells))}
		for i, c := range row.Cells {
			if im.aggregate[c.Family] {
				return fmt.Errorf("%s: row %q at line %d: family %s is an aggregate family; a bulk load writes bytes families only (its cells would add to what is there): import this table without --bulk", name, row.Key, jr.Line, c.Family)
			}
			r.Cells[i] = cell.Cell{Family: c.Family, Qualifier: append([]byte(nil), c.Qualifier...), Timestamp: c.Timestamp, Value: append([]byte(nil), c.Value...)}
			size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 16
		}
		size += len(r.Key)
		rows = append(rows, r)
		if size >= bulkChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
