package backup

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/vfs"
)

// RestoreOptions says which backup to restore into which new table.
type RestoreOptions struct {
	From  *Location
	Name  string
	Table string // the new table; it must not exist
	// Client is the cluster restored into (any cluster).
	Client *client.Client
	// ScratchDir holds one tablet's files at a time while they are read
	// (default: the system's temporary folder).
	ScratchDir string
	// BatchRows rows are written per ApplyBulk (default 500).
	BatchRows int
	// OnBytes sees the bytes of files fetched; OnRows the rows written.
	OnBytes func(int64)
	OnRows  func(rows, cells int64)
}

// RestoreResult is what Restore wrote.
type RestoreResult struct {
	Tablets     int
	Rows, Cells int64
}

// Restore creates opts.Table with the backup's schema and tablet
// boundaries and writes into it every cell the backup holds: each tablet's
// files are fetched from the location into a scratch folder and read there
// by the engine, as a clone of the snapshot's hold would be read
// (docs/CONTRACTS.md §4b), and the rows go through the table's write path.
// Restoring into the new table's folders directly needs a master call that
// creates a table from prepared tablet manifests (issue 23); this way
// works into any cluster and any storage, and costs a write of every cell.
func Restore(ctx context.Context, opts RestoreOptions) (*RestoreResult, error) {
	m, err := Describe(opts.From, opts.Name)
	if err != nil {
		return nil, err
	}
	var schema tabulapb.TableSchema
	if err := protojson.Unmarshal(m.Schema, &schema); err != nil {
		return nil, fmt.Errorf("backup: the schema of %s: %w", m.Name, err)
	}
	fams, err := convert.FamiliesFromProto(schema.GetFamilies())
	if err != nil {
		return nil, fmt.Errorf("backup: the families of %s: %w", m.Name, err)
	}
	var splits [][]byte
	for _, t := range m.Tablets {
		if len(t.State.RangeStart) > 0 {
			splits = append(splits, t.State.RangeStart)
		}
	}
	info := client.TableInfo{Name: opts.Table, Families: fams, SplitThreshold: schema.GetSplitThresholdBytes()}
	if err := opts.Client.Admin().CreateTableWithInfo(ctx, info, splits); err != nil {
		return nil, fmt.Errorf("backup: creating table %s: %w", opts.Table, err)
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = 500
	}
	sums := map[string]File{}
	for _, f := range m.Files {
		sums[f.Path] = f
	}
	res := &RestoreResult{}
	w := &rowWriter{ctx: ctx, tbl: opts.Client.Open(opts.Table), batch: opts.BatchRows, res: res, onRows: opts.OnRows}
	// A write of an aggregate cell is never retried (its outcome may be
	// unknown), so the writes start once every tablet serves.
	if err := waitServing(ctx, w.tbl, m.Tablets); err != nil {
		return res, err
	}
	for _, t := range m.Tablets {
		if err := restoreTablet(ctx, opts, m, t, fams, sums, w); err != nil {
			return res, err
		}
		res.Tablets++
	}
	return res, w.flush()
}

// restoreTablet fetches one tablet's files into a scratch folder laid out
// as files/ is, saves the tablet's state there as its manifest, and writes
// every row the engine reads from it.
func restoreTablet(ctx context.Context, opts RestoreOptions, m *Manifest, t Tablet, fams []families.Family, sums map[string]File, w *rowWriter) error {
	scratch, err := os.MkdirTemp(opts.ScratchDir, "tabula-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	for _, f := range t.State.Files {
		rel, err := tabletFileRel(m.Table, t.ID, f.Path)
		if err != nil {
			return err
		}
		to := filepath.Join(scratch, filepath.FromSlash(rel))
		if _, err := os.Stat(to); err == nil {
			continue // a parent's file two references share
		}
		if err := fetch(ctx, opts.From, sums[rel], to, opts.OnBytes); err != nil {
			return err
		}
	}
	dir := filepath.Join(scratch, filepath.FromSlash(m.Table), t.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st := t.State
	st.Log, st.ReplayPoint = "", 0
	if err := manifest.Save(vfs.Default, dir, st); err != nil {
		return err
	}
	aggregate := map[string]bool{}
	for _, f := range fams {
		aggregate[f.Name] = f.ValueType.IsAggregate()
	}
	tb, err := tablet.Open(tablet.Options{Dir: dir, Families: fams, DisableBackgroundWork: true})
	if err != nil {
		return fmt.Errorf("backup: opening tablet %s of %s: %w", t.ID, m.Name, err)
	}
	defer tb.Close()
	it, err := tb.NewRowIterator(ctx, tablet.ReadOptions{})
	if err != nil {
		return err
	}
	for it.Next() {
		mut := client.NewMutation()
		cells := it.Cells()
		for _, c := range cells {
			if aggregate[c.Family] {
				// A read of an aggregate cell is its merged state; merged
				// into a cell the new table does not have, it is that state
				// (as an import of an export writes it).
				mut.MergeToCell(c.Family, c.Qualifier, c.Timestamp, c.Value)
			} else {
				mut.Set(c.Family, c.Qualifier, c.Timestamp, c.Value)
			}
		}
		if err := w.add(append([]byte(nil), it.Row()...), mut, int64(len(cells))); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("backup: reading tablet %s of %s: %w", t.ID, m.Name, err)
	}
	return w.flush()
}

// fetch copies the location's file f to the local path to, checking its
// size and CRC32C on the way.
func fetch(ctx context.Context, loc *Location, f File, to string, onBytes func(int64)) error {
	rel := f.Path
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := loc.FS.Open(loc.file(rel))
	if err != nil {
		return fmt.Errorf("backup: %s: %w", rel, err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(out, h, progressWriter(onBytes)), ctxReader{ctx, io.NewSectionReader(in, 0, in.Size())})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && (n != f.Size || h.Sum32() != f.CRC32C) {
		err = fmt.Errorf("%d bytes of CRC32C %08x, the manifest says %d of %08x (run backup verify)", n, h.Sum32(), f.Size, f.CRC32C)
	}
	if err != nil {
		return fmt.Errorf("backup: fetching %s: %w", rel, err)
	}
	return nil
}

// rowWriter writes rows in batches through ApplyBulk, retrying the rows
// that failed (a new table's tablets may not serve yet).
type rowWriter struct {
	ctx    context.Context
	tbl    *client.Table
	batch  int
	res    *RestoreResult
	onRows func(rows, cells int64)
	rows   [][]byte
	muts   []*client.Mutation
	cells  int64
}

func (w *rowWriter) add(row []byte, m *client.Mutation, cells int64) error {
	w.rows, w.muts = append(w.rows, row), append(w.muts, m)
	w.cells += cells
	if len(w.rows) >= w.batch {
		return w.flush()
	}
	return nil
}

func (w *rowWriter) flush() error {
	rows, muts := w.rows, w.muts
	backoff := 50 * time.Millisecond
	for attempt := 0; len(rows) > 0; attempt++ {
		errs, err := w.tbl.ApplyBulk(w.ctx, rows, muts)
		if err != nil {
			return fmt.Errorf("backup: writing rows: %w", err)
		}
		var failed error
		var rr [][]byte
		var mm []*client.Mutation
		for i, e := range errs {
			if e == nil {
				continue
			}
			if !muts[i].Idempotent() {
				return fmt.Errorf("backup: writing row %q, which holds aggregate cells (a write not retried: its outcome is unknown; delete the table and restore again): %w", rows[i], e)
			}
			failed = e
			rr, mm = append(rr, rows[i]), append(mm, muts[i])
		}
		if failed == nil {
			break
		}
		if attempt >= 20 {
			return fmt.Errorf("backup: writing %d rows (first %q): %w", len(rr), rr[0], failed)
		}
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
		rows, muts = rr, mm
	}
	w.res.Rows += int64(len(w.rows))
	w.res.Cells += w.cells
	if w.onRows != nil {
		w.onRows(int64(len(w.rows)), w.cells)
	}
	w.rows, w.muts, w.cells = nil, nil, 0
	return nil
}

// waitServing reads a row of each tablet until every one answers: a new
// table's tablets serve once the master has assigned them.
func waitServing(ctx context.Context, tbl *client.Table, tablets []Tablet) error {
	backoff := 20 * time.Millisecond
	for _, t := range tablets {
		key := t.State.RangeStart
		for {
			_, err := tbl.ReadRow(ctx, key)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("backup: waiting for the new table's tablets to serve: %w (last: %v)", ctx.Err(), err)
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
	}
	return nil
}
