package tablet

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// Bulk load (docs/CONTRACTS.md §3, "Bulk load").
//
// Ingest writes rows given in key order straight into new SSTables of the
// tablet, one per family, and publishes them all in one manifest save: no
// commit log record, no memtable, nothing for compactions to merge but
// the files themselves. Every cell it writes carries one sequence number
// S, taken the way a write takes its number but in the same commit
// critical section as a memtable swap (the cut, flushReserving): every
// write acknowledged before the call is in the flushed memtable, with a
// number below S; every write after the cut gets a number above it. So
// an ingested cell replaces an older cell of the same column and
// timestamp, is deleted by later tombstones and not by earlier ones, and
// loses to a write made while the ingest ran, as if the whole load were
// one write at the cut.
//
// The files stay sorted newest first by their largest number (version.go)
// only if no file spans S: from the cut to the publication compactions
// are held off (compactMu), so the only files made meanwhile are flushes
// of memtables written after the cut, all above S. Flushes and writes go
// on. The manifest that publishes the files records S as covered
// (LastSeq), so a reopened tablet numbers its next write above S.
//
// On an error (bad input, the context, a closed tablet, a failed write)
// the files made so far are removed and the tablet is as before: a load
// killed midway leaves the tablet with all of its files or none.

// IngestSource yields the rows of a bulk load in strictly ascending key
// order, each with its cells in any order; a cell's Row is ignored. The
// slices it passes are not kept after yield returns. An error yield
// returns must be returned by the source (the load stops with it).
type IngestSource func(yield func(row []byte, cells []cell.Cell) error) error

// IngestResult says what an ingest added.
type IngestResult struct {
	Rows, Cells int64
	Files       int
	Bytes       uint64
	// Seq is the sequence number every ingested cell carries.
	Seq uint64
}

// Ingest adds the rows src yields to the tablet as new SSTables, published
// together; see above. Rows must lie in the tablet's range, cells must
// name families of its schema that hold bytes (an aggregate family's
// cells are loaded with AddToCell, where they add to what is there), and
// a row may not hold the same column and timestamp twice.
func (t *Tablet) Ingest(ctx context.Context, src IngestSource) (IngestResult, error) {
	if t.closed.Load() {
		return IngestResult{}, ErrClosed
	}
	if err := t.checkGuard("ingest"); err != nil {
		return IngestResult{}, err
	}
	start := time.Now()
	t.flushMu.Lock()
	if t.closed.Load() {
		t.flushMu.Unlock()
		return IngestResult{}, ErrClosed
	}
	// The cut: the first flush finishes memtables frozen by an earlier
	// failed flush (or swaps the active one); the second swaps the active
	// memtable and reserves S with the swap.
	err := t.flushLocked(ctx, false)
	var seq uint64
	if err == nil {
		seq, err = t.flushReserving(ctx, false, true)
		if err == nil && seq == 0 {
			err = fmt.Errorf("tablet: ingest: no sequence number reserved")
		}
	}
	if err != nil {
		t.flushMu.Unlock()
		return IngestResult{}, err
	}
	// No compaction until the files are published: none may merge a file
	// below S with one above it. Taken before flushMu is released.
	t.compactMu.Lock()
	defer t.compactMu.Unlock()
	t.flushMu.Unlock()

	w := &ingestWriter{t: t, seq: seq, sch: t.schema.Load(), outs: map[string]*tableOut{}}
	res := IngestResult{Seq: seq}
	err = src(func(row []byte, cells []cell.Cell) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.closed.Load() {
			return ErrClosed
		}
		if err := w.row(row, cells); err != nil {
			return err
		}
		res.Rows++
		res.Cells += int64(len(cells))
		return nil
	})
	if err != nil {
		return IngestResult{}, w.abort(err)
	}
	made, err := w.finish()
	if err != nil {
		return IngestResult{}, err
	}
	res.Files, res.Bytes = len(made), filesSize(made)
	if len(made) == 0 {
		return res, nil
	}

	t.editMu.Lock()
	head := t.head()
	if head == nil {
		t.editMu.Unlock()
		return IngestResult{}, t.abandon(made, ErrClosed)
	}
	files := head.files
	for _, f := range made {
		files = (&version{files: files}).edit(f.ref.Family, func(fs []*tableFile) []*tableFile { return append(fs, f) })
	}
	// The manifest covers S: every write below it is in a file (the cut),
	// and S is in these. The replay point stays where the last flush put it.
	err = t.installLocked(files, &immutable{replayPoint: t.replayPoint, lastSeq: seq}, nil)
	t.editMu.Unlock()
	if err != nil {
		return IngestResult{}, t.abandon(made, err)
	}
	// Readers see S from now on: every number below it is in a file.
	for {
		v := t.visibleSeq.Load()
		if v >= seq || t.visibleSeq.CompareAndSwap(v, seq) {
			break
		}
	}
	t.logger.Info("ingested", "event", "ingest", "dir", t.dir, "rows", res.Rows, "cells", res.Cells,
		"files", res.Files, "bytes", res.Bytes, "duration", time.Since(start).Round(time.Millisecond))
	t.requestCompaction()
	return res, nil
}

// ingestWriter writes one ingest's rows into an SSTable per family.
type ingestWriter struct {
	t       *Tablet
	seq     uint64
	sch     *schema
	outs    map[string]*tableOut
	lastRow []byte
	muts    []cell.Mutation // the row's cells as writes, to check; reused
	keyBuf  []byte          // the row's encoded keys of one family, reused
	ents    []ingestEntry   // and their cells
}

// ingestEntry is one cell of the row being written: its encoded key at
// keyBuf[start:end].
type ingestEntry struct {
	start, end int
	c          *cell.Cell
}

// row checks one row and adds its cells to the families' files.
func (w *ingestWriter) row(row []byte, cells []cell.Cell) error {
	if err := w.t.checkRow(row); err != nil {
		return err
	}
	if w.lastRow != nil && bytes.Compare(row, w.lastRow) <= 0 {
		return cell.Invalidf("ingest: row %q after %q: rows must come in strictly ascending key order", row, w.lastRow)
	}
	w.lastRow = append(w.lastRow[:0], row...)
	w.muts = w.muts[:0]
	for _, c := range cells {
		w.muts = append(w.muts, cell.Mutation{Kind: cell.SetCell, Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
		if c.Timestamp < 0 {
			return cell.Invalidf("ingest: row %q, %s:%q: timestamp %d is not an explicit timestamp (microseconds, >= 0)", row, c.Family, c.Qualifier, c.Timestamp)
		}
	}
	if err := w.t.checkMutations(w.sch, row, w.muts, false); err != nil {
		return err
	}
	// One family at a time, in the order of the schema's names; each
	// family's keys sorted (the cells may come in any order), so a cell
	// given twice (same qualifier and timestamp: the same key) is next to
	// its twin.
	for _, name := range w.sch.names {
		w.keyBuf, w.ents = w.keyBuf[:0], w.ents[:0]
		for i := range cells {
			c := &cells[i]
			if c.Family != name {
				continue
			}
			start := len(w.keyBuf)
			w.keyBuf = cell.AppendKey(w.keyBuf, cell.Key{Row: row, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Seq: w.seq, Kind: cell.KindSet})
			w.ents = append(w.ents, ingestEntry{start: start, end: len(w.keyBuf), c: c})
		}
		if len(w.ents) == 0 {
			continue
		}
		key := func(e ingestEntry) []byte { return w.keyBuf[e.start:e.end] }
		slices.SortFunc(w.ents, func(a, b ingestEntry) int { return bytes.Compare(key(a), key(b)) })
		for i := 1; i < len(w.ents); i++ {
			if bytes.Equal(key(w.ents[i-1]), key(w.ents[i])) {
				c := w.ents[i].c
				return cell.Invalidf("ingest: row %q holds %s:%q at timestamp %d twice", row, c.Family, c.Qualifier, c.Timestamp)
			}
		}
		o := w.outs[name]
		if o == nil {
			var err error
			if o, err = w.t.createTable(w.sch.byName[name], 0); err != nil {
				return err
			}
			w.outs[name] = o
		}
		for _, e := range w.ents {
			if err := o.w.Add(key(e), e.c.Value); err != nil {
				return fmt.Errorf("tablet: ingest: %w", err)
			}
			o.n++
		}
	}
	return nil
}

// finish closes every family's file and opens it; on an error every file
// is removed.
func (w *ingestWriter) finish() ([]*tableFile, error) {
	var made []*tableFile
	for _, name := range w.sch.names {
		o := w.outs[name]
		if o == nil {
			continue
		}
		delete(w.outs, name)
		f, err := w.t.finishTable(w.sch.byName[name], o)
		if err != nil {
			return nil, w.t.abandon(made, w.abort(err))
		}
		made = append(made, f)
	}
	return made, nil
}

// abort removes the files still being written and returns err.
func (w *ingestWriter) abort(err error) error {
	for name, o := range w.outs {
		o.abort(w.t)
		delete(w.outs, name)
	}
	return err
}
