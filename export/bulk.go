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
func (im *importer) bulkFile(ctx context.Context, name string, jr *fileReader) error {
	var (
		rows []client.Row
		size int
		cp   rowCopier
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
		for _, c := range row.Cells {
			if im.aggregate[c.Family] {
				unit, at := jr.pos()
				return fmt.Errorf("%s: row %q at %s %d: family %s is an aggregate family; a bulk load writes bytes families only (its cells would add to what is there): import this table without --bulk", name, row.Key, unit, at, c.Family)
			}
			size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 16
		}
		size += len(row.Key)
		rows = append(rows, cp.row(row))
		if size >= bulkChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// rowCopier copies rows (valid only until a reader's next call) into
// memory of its own, handed out in chunks that are never written again:
// a chunk of rows holds up to bulkChunkBytes, and copying each key,
// qualifier and value into an allocation of its own cost the load's
// client more than the copy.
type rowCopier struct {
	bytes []byte
	cells []cell.Cell
}

// copierChunk is the size of the copier's byte chunks; a longer field gets
// a chunk of its own size.
const copierChunk = 1 << 20

func (c *rowCopier) copy(b []byte) []byte {
	if cap(c.bytes)-len(c.bytes) < len(b) {
		c.bytes = make([]byte, 0, max(copierChunk, len(b)))
	}
	n := len(c.bytes)
	c.bytes = append(c.bytes, b...)
	return c.bytes[n:len(c.bytes):len(c.bytes)]
}

func (c *rowCopier) row(r Row) client.Row {
	if cap(c.cells)-len(c.cells) < len(r.Cells) {
		c.cells = make([]cell.Cell, 0, max(copierChunk/64, len(r.Cells)))
	}
	n := len(c.cells)
	for _, x := range r.Cells {
		c.cells = append(c.cells, cell.Cell{Family: x.Family, Qualifier: c.copy(x.Qualifier), Timestamp: x.Timestamp, Value: c.copy(x.Value)})
	}
	return client.Row{Key: c.copy(r.Key), Cells: c.cells[n:len(c.cells):len(c.cells)]}
}
