package client

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/locator"
)

// BulkLoadStats says what a BulkLoad added.
type BulkLoadStats struct {
	Rows, Cells int64
	// Calls is the IngestRows calls that succeeded: one per tablet, more
	// when a tablet split or moved during the load.
	Calls int
	// Resent counts the calls sent again after a retryable failure (the
	// tablet moved, split or merged, or its server went away).
	Resent int
	// Files and Bytes are the SSTables the tablets published.
	Files int64
	Bytes int64
}

// bulkLoadMessageBytes bounds the rows of one IngestRows message, well
// under gRPC's default 4 MiB message limit.
const bulkLoadMessageBytes = 1 << 20

// bulkLoadParallelism bounds the tablets loaded at once.
const bulkLoadParallelism = 4

// BulkLoad loads rows, in strictly ascending key order, as new SSTables of
// the tablets that hold them (docs/OPERATIONS.md "Bulk load"): without the
// tablets' commit logs or memtables, each tablet's share published whole
// or not at all (HBase's bulk load). Cells need explicit timestamps and
// bytes families (an aggregate family's cells go through AddToCell), and a
// row holds a column and timestamp once. A load orders, in each tablet, as
// one write made when that tablet's share began: it replaces older cells
// of the same column and timestamp, and later writes replace it.
//
// A share whose tablet split, merged or moved meanwhile is located again
// and sent again, cut at the new boundaries; other errors stop the load:
// no share starts after one failed. The shares already loaded stay, and loading the same rows again
// writes the same cells (with explicit timestamps, nothing changes): a
// failed BulkLoad can be rerun whole.
func (t *Table) BulkLoad(ctx context.Context, rows []Row) (BulkLoadStats, error) {
	for i := range rows {
		if i > 0 && bytes.Compare(rows[i-1].Key, rows[i].Key) >= 0 {
			return BulkLoadStats{}, invalid("BulkLoad: row %d (%q) is not after row %d (%q); give rows in strictly ascending key order", i, rows[i].Key, i-1, rows[i-1].Key)
		}
	}
	var (
		mu    sync.Mutex
		stats BulkLoadStats
		first error
		wg    sync.WaitGroup
		slots = make(chan struct{}, bulkLoadParallelism)
	)
	// Shares are cut at the boundaries the locator knows now; a share
	// whose tablet changed is cut again inside loadShare.
	for len(rows) > 0 {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break // no share starts after one failed
		}
		tab, err := t.locateForLoad(ctx, rows[0].Key)
		if err != nil {
			wg.Wait()
			return stats, err
		}
		n := shareLen(rows, tab)
		share := rows[:n]
		rows = rows[n:]
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return stats, contextStatus(ctx, first)
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			s, err := t.loadShare(ctx, share)
			mu.Lock()
			defer mu.Unlock()
			stats.Rows += s.Rows
			stats.Cells += s.Cells
			stats.Calls += s.Calls
			stats.Resent += s.Resent
			stats.Files += s.Files
			stats.Bytes += s.Bytes
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return stats, first
}

// locateForLoad locates the tablet of row, retrying while it is
// unassigned.
func (t *Table) locateForLoad(ctx context.Context, row []byte) (locator.Tablet, error) {
	r := t.c.newRetrier()
	for {
		tab, err := t.c.loc.Locate(ctx, t.name, row)
		if err == nil {
			return tab, nil
		}
		again, st := locateError(err)
		if !again || ctx.Err() != nil {
			return tab, st
		}
		if werr := r.wait(ctx, st); werr != nil {
			return tab, werr
		}
	}
}

// shareLen returns how many of rows (ascending, the first in tab) tab
// holds.
func shareLen(rows []Row, tab locator.Tablet) int {
	if len(tab.End) == 0 {
		return len(rows)
	}
	n := 0
	for n < len(rows) && bytes.Compare(rows[n].Key, tab.End) < 0 {
		n++
	}
	return max(n, 1)
}

// loadShare loads rows, all in one tablet when they were cut, in one
// IngestRows call; if the tablet changed, in as many calls as the tablets
// now holding them.
func (t *Table) loadShare(ctx context.Context, rows []Row) (BulkLoadStats, error) {
	var stats BulkLoadStats
	r := t.c.newRetrier()
	for len(rows) > 0 {
		tab, err := t.locateForLoad(ctx, rows[0].Key)
		if err != nil {
			return stats, err
		}
		n := shareLen(rows, tab)
		resp, err := t.ingest(ctx, tab, rows[:n])
		if err == nil {
			r.progress()
			stats.Rows += resp.GetRows()
			stats.Cells += resp.GetCells()
			stats.Files += resp.GetFiles()
			stats.Bytes += resp.GetBytes()
			stats.Calls++
			rows = rows[n:]
			continue
		}
		// Nothing of the call was published unless its answer was lost
		// after it was: loading the rows again writes the same cells.
		again, evict := serverError(err, true)
		if evict {
			t.c.loc.Invalidate(tab)
		}
		if !again || ctx.Err() != nil {
			return stats, fmt.Errorf("bulk load of %s rows [%q, %q]: %w", t.name, rows[0].Key, rows[n-1].Key, err)
		}
		if werr := r.wait(ctx, err); werr != nil {
			return stats, werr
		}
		stats.Resent++
	}
	return stats, nil
}

// ingest sends rows to tab in one IngestRows call.
func (t *Table) ingest(ctx context.Context, tab locator.Tablet, rows []Row) (*tabulapb.IngestRowsResponse, error) {
	bl, err := t.c.pool.bulkLoad(tab.Address)
	if err != nil {
		return nil, err
	}
	stream, err := bl.IngestRows(ctx, grpc.ForceCodecV2(convert.Codec{}))
	if err != nil {
		return nil, err
	}
	// Each message is encoded here (convert.AppendIngestRow) and sent
	// as its bytes: no Row and Cell messages made per row.
	head, err := convert.AppendIngestTablet(nil, tab.Ref())
	if err != nil {
		return nil, err
	}
	var buf *[]byte
	for _, row := range rows {
		if buf == nil {
			buf = convert.MessageBuffer()
			*buf = append(*buf, head...)
		}
		before := len(*buf)
		*buf = convert.AppendIngestRow(*buf, row.Key, row.Cells)
		if before > len(head) && len(*buf) > bulkLoadMessageBytes {
			// The row goes in the next message.
			next := convert.MessageBuffer()
			*next = append(append(*next, head...), (*buf)[before:]...)
			*buf = (*buf)[:before]
			if err := stream.SendMsg(convert.EncodedMessage(buf)); err != nil {
				buf = nil
				break // the answer below says why
			}
			buf = next
		}
	}
	if buf != nil {
		_ = stream.SendMsg(convert.EncodedMessage(buf)) // an error shows in the answer
	}
	return stream.CloseAndRecv()
}
