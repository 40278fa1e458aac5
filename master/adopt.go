package master

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
)

// Adopting a table: creating a table whose tablets' files already exist,
// from manifests prepared for it (a clone of a snapshot, docs/CONTRACTS.md
// §4a; a restore from a backup may be another). The folders come first,
// the records after, in one transaction guarded by the term:
//
//  1. each tablet gets a new id, and its first manifest is written in its
//     new folder (prepared tablet's Write): it names files that exist,
//     wherever they lie;
//  2. the schema and every tablet (unassigned, not Fresh: its files
//     exist) are written in ONE transaction (the caller's commit, which
//     may add conditions of its own), guarded by the table not existing
//     and by the term.
//
// A master that dies, or loses its term, between the two leaves folders
// that no record names: the GC keeps them (and what they reference) for
// its grace period, then removes them with the table's folder. So the
// table is created whole or not at all, and what a failed adoption wrote
// is swept.

// adoptTablet is one tablet of a table being adopted.
type adoptTablet struct {
	start, end []byte
	// write saves the tablet's first manifest in dir, its new folder
	// (made if missing), naming files that exist.
	write func(dir string) error
}

// adoptCommit writes the table's records in one transaction guarded by g;
// meta.CreateTable, or a variant with more conditions (meta.CloneTable).
type adoptCommit func(ctx context.Context, table meta.TableRecord, tablets []meta.TabletRecord, g meta.Guard) error

// adoption is a table whose tablets' folders are written (step 1) and
// whose records are not yet committed (step 2).
type adoption struct {
	schema *tabulapb.TableSchema
	recs   []meta.TabletRecord
	commit adoptCommit
}

// adoptTable creates the table schema.Name from tablets (in key order,
// tiling the key space) as described above. ALREADY_EXISTS if the table
// exists; a commit that fails for another reason is ErrConflict (retry).
func (m *Master) adoptTable(ctx context.Context, term *leadership, schema *tabulapb.TableSchema, tablets []adoptTablet, commit adoptCommit) error {
	if err := m.adoptableName(ctx, schema.GetName()); err != nil {
		return err
	}
	a, err := m.prepareAdopt(schema, tablets, commit)
	if err != nil {
		return err
	}
	return m.commitAdopt(ctx, term, a)
}

// adoptableName fails with ALREADY_EXISTS if table exists.
func (m *Master) adoptableName(ctx context.Context, table string) error {
	if _, _, err := meta.GetTable(ctx, m.cli, m.layout, table); err == nil {
		return existsf("table %s already exists", table)
	} else if !errors.Is(err, meta.ErrNotFound) {
		return err
	}
	return nil
}

// prepareAdopt is step 1: each tablet's folder, under a new id, with its
// first manifest. It looks at no record: a caller may write the folders
// of a table that still exists and is to be replaced (a restore), since
// nothing names them until the commit.
func (m *Master) prepareAdopt(schema *tabulapb.TableSchema, tablets []adoptTablet, commit adoptCommit) (*adoption, error) {
	if m.opts.StorageRoot == "" {
		return nil, notReadyf("table %s: this master has no storage root (--storage-root) to write its tablets' manifests in", schema.GetName())
	}
	table := schema.GetName()
	a := &adoption{schema: schema, recs: make([]meta.TabletRecord, len(tablets)), commit: commit}
	for i, t := range tablets {
		id := meta.NewTabletID()
		dir, err := storepath.Tablet(m.opts.StorageRoot, table, id)
		if err != nil {
			return nil, err
		}
		if err := t.write(dir); err != nil {
			return nil, fmt.Errorf("table %s: writing the manifest of tablet %s: %w", table, id, err)
		}
		a.recs[i] = meta.TabletRecord{Table: table, ID: id, Start: t.start, End: t.end, State: meta.StateUnassigned}
	}
	return a, nil
}

// commitAdopt is step 2: the records in one transaction guarded by term.
func (m *Master) commitAdopt(ctx context.Context, term *leadership, a *adoption) error {
	// The folders exist before the records that name them.
	if err := m.adoptFault("commit"); err != nil {
		return err
	}
	table := a.schema.GetName()
	err := a.commit(ctx, meta.TableRecord{Schema: a.schema}, a.recs, term.guard())
	if err == nil {
		m.log.Info("adopted table", "table", table, "tablets", len(a.recs))
		term.assign.poke()
		return nil
	}
	if !errors.Is(err, meta.ErrConflict) {
		return err
	}
	if _, _, gerr := meta.GetTable(ctx, m.cli, m.layout, table); gerr == nil {
		return existsf("table %s already exists", table)
	}
	if ns, _ := cell.SplitTableName(table); ns != cell.DefaultNamespace {
		return fmt.Errorf("%w: table %s: its namespace %s changed or is full, or the term ended; retry", meta.ErrConflict, table, ns)
	}
	return fmt.Errorf("%w: table %s: its source changed, or the term ended; retry", meta.ErrConflict, table)
}

// adoptFault is a test's hook: a non-nil error it returns at point fails
// the adoption there, as a master dying at that point would leave it.
func (m *Master) adoptFault(point string) error {
	if m.testHooks.adoptFault == nil {
		return nil
	}
	return m.testHooks.adoptFault(point)
}

// testHooks lets a test fail the master at a point of a protocol.
type testHooks struct {
	// adoptFault is called by adoptTable at "commit", after the folders
	// and before the transaction.
	adoptFault func(point string) error
}
