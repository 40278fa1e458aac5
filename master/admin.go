package master

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
)

// CreateTable validates the schema and split keys, writes the schema and
// every tablet in one transaction (ALREADY_EXISTS if the table exists),
// then lets the assignment loop place the tablets.
func (m *Master) CreateTable(ctx context.Context, req *tabulapb.CreateTableRequest) (*tabulapb.TableSchema, error) {
	s, err := m.createTable(ctx, req)
	return s, toStatus(ctx, err)
}

func (m *Master) createTable(ctx context.Context, req *tabulapb.CreateTableRequest) (*tabulapb.TableSchema, error) {
	schema, err := checkSchema(req.GetSchema())
	if err != nil {
		return nil, err
	}
	if err := checkSplitKeys(req.GetSplitKeys()); err != nil {
		return nil, err
	}
	schema.UserSplitKeys, schema.AutoMergeDisabled = req.GetSplitKeys(), req.GetSchema().GetAutoMergeDisabled() // docs/OPERATIONS.md "Merges"
	schema.DeletionProtection = req.GetSchema().GetDeletionProtection()
	term, err := m.lead(ctx)
	if err != nil {
		return nil, err
	}
	l := m.layout
	var tablets []meta.TabletRecord
	var start []byte
	keys := append(slices.Clip(req.GetSplitKeys()), nil) // the last tablet ends at the end of the table
	for _, end := range keys {
		tablets = append(tablets, meta.TabletRecord{Table: schema.Name, ID: meta.NewTabletID(), Start: start, End: end, State: meta.StateUnassigned, Fresh: true})
		start = end
	}
	err = meta.CreateTable(ctx, m.cli, l, meta.TableRecord{Schema: schema}, tablets, term.guard())
	if err != nil && !errors.Is(err, meta.ErrConflict) {
		return nil, err
	}
	if err != nil {
		if _, _, err := meta.GetTable(ctx, m.cli, l, schema.Name); err == nil {
			return nil, existsf("table %s already exists", schema.Name)
		}
		if ns, _ := cell.SplitTableName(schema.Name); ns != cell.DefaultNamespace {
			if _, _, err := meta.GetNamespace(ctx, m.cli, l, ns); errors.Is(err, meta.ErrNotFound) {
				return nil, notFoundf("namespace %s was deleted while table %s was created in it", ns, schema.Name)
			}
			// Or a table was created in a namespace with max_tables:
			// the caller's retry counts again.
			return nil, fmt.Errorf("%w: namespace %s changed during CreateTable; retry", meta.ErrConflict, ns)
		}
		return nil, fmt.Errorf("%w (leadership lost during CreateTable; retry)", ErrNotLeader)
	}
	m.log.Info("created table", "table", schema.Name, "tablets", len(keys))
	term.assign.poke()
	return schema, nil
}

// DeleteTable marks the table deleting, unloads its tablets, deletes the
// schema and the tablets in one transaction, and removes its files when
// Options.StorageRoot is set.
func (m *Master) DeleteTable(ctx context.Context, req *tabulapb.DeleteTableRequest) (*tabulapb.DeleteTableResponse, error) {
	return &tabulapb.DeleteTableResponse{}, toStatus(ctx, m.deleteTable(ctx, req.GetTable()))
}

func (m *Master) deleteTable(ctx context.Context, name string) error {
	if err := cell.ValidateTableName(name); err != nil {
		return err
	}
	term, err := m.lead(ctx)
	if err != nil {
		return err
	}
	l := m.layout
	rec, rev, err := meta.GetTable(ctx, m.cli, l, name)
	if errors.Is(err, meta.ErrNotFound) {
		return notFoundf("table %s does not exist", name)
	}
	if err != nil {
		return err
	}
	// The check and every write below are at rev: a protection set after
	// this read fails the guarded writes (ErrConflict), never slips by.
	if rec.Schema.GetDeletionProtection() {
		return protectedf(name, "DeleteTable")
	}
	// 1. Mark it deleting: the assignment loop stops placing its tablets.
	if rec.Schema.GetState() != meta.TableDeleting {
		s := cloneSchema(rec.Schema)
		s.State = meta.TableDeleting
		if rev, err = m.putSchema(ctx, term, s, rev); err != nil {
			return err
		}
	}
	// 2. Unload every held tablet (best effort: a dead server holds nothing).
	tablets, _, err := meta.GetTablets(ctx, m.cli, l, name)
	if err != nil {
		return err
	}
	for _, t := range tablets {
		if t.Address == "" {
			continue
		}
		err := m.callServer(ctx, t.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
			_, err := c.UnloadTablet(ctx, &tabulapb.UnloadTabletRequest{Tablet: &tabulapb.TabletRef{Table: t.Table, TabletId: t.ID, Epoch: t.Epoch}})
			return err
		})
		if err != nil {
			m.log.Info("unloading a deleted table's tablet", "table", name, "tablet", t.ID, "server", t.Server, "err", err)
		}
	}
	// 3. Delete schema and tablets at once.
	err = meta.DeleteTable(ctx, m.cli, l, name, rev, term.guard())
	if err != nil && !errors.Is(err, meta.ErrConflict) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: table %s changed while being deleted; retry", meta.ErrConflict, name)
	}
	// 4. Files.
	m.removeTableFiles(name)
	m.log.Info("deleted table", "table", name)
	return nil
}

// AddFamily adds a family (ALREADY_EXISTS if present) and pushes the new
// schema to the servers holding the table's tablets.
func (m *Master) AddFamily(ctx context.Context, req *tabulapb.FamilyRequest) (*tabulapb.TableSchema, error) {
	s, err := m.changeFamilies(ctx, req.GetTable(), func(s *tabulapb.TableSchema) error {
		f, err := checkFamily(req.GetFamily())
		if err != nil {
			return err
		}
		if familyIndex(s, f.Name) >= 0 {
			return existsf("family %s already exists in table %s", f.Name, s.Name)
		}
		s.Families = append(s.Families, f)
		sortFamilies(s)
		return nil
	})
	return s, toStatus(ctx, err)
}

// ModifyFamily replaces a family's settings (NOT_FOUND if absent). Its
// value type cannot change (INVALID_ARGUMENT).
func (m *Master) ModifyFamily(ctx context.Context, req *tabulapb.FamilyRequest) (*tabulapb.TableSchema, error) {
	s, err := m.changeFamilies(ctx, req.GetTable(), func(s *tabulapb.TableSchema) error {
		f, err := checkFamily(req.GetFamily())
		if err != nil {
			return err
		}
		i := familyIndex(s, f.Name)
		if i < 0 {
			return notFoundf("family %s does not exist in table %s", f.Name, s.Name)
		}
		// The value type is fixed at creation: the cells written are
		// read through it.
		old, err := convert.FamilyFromProto(s.Families[i])
		if err != nil {
			return err
		}
		nf, err := convert.FamilyFromProto(f)
		if err != nil {
			return err
		}
		if err := families.CheckModify(old, nf); err != nil {
			return err
		}
		s.Families[i] = f
		return nil
	})
	return s, toStatus(ctx, err)
}

// DeleteFamily removes a family (NOT_FOUND if absent; FAILED_PRECONDITION
// while the table has deletion protection); the tablet servers drop its
// data.
func (m *Master) DeleteFamily(ctx context.Context, req *tabulapb.DeleteFamilyRequest) (*tabulapb.TableSchema, error) {
	s, err := m.changeFamilies(ctx, req.GetTable(), func(s *tabulapb.TableSchema) error {
		if err := cell.ValidateFamilyName(req.GetFamily()); err != nil {
			return err
		}
		i := familyIndex(s, req.GetFamily())
		if i < 0 {
			return notFoundf("family %s does not exist in table %s", req.GetFamily(), s.Name)
		}
		if s.GetDeletionProtection() {
			return protectedf(s.Name, "DeleteFamily "+req.GetFamily())
		}
		s.Families = append(s.Families[:i], s.Families[i+1:]...)
		return nil
	})
	return s, toStatus(ctx, err)
}

// SetDeletionProtection sets or clears the table's deletion protection
// (TableSchema.deletion_protection): while set, DeleteTable and
// DeleteFamily answer FAILED_PRECONDITION. The data API (and DropRowRange)
// can still delete rows, as in Cloud Bigtable.
func (m *Master) SetDeletionProtection(ctx context.Context, req *tabulapb.SetDeletionProtectionRequest) (*tabulapb.SetDeletionProtectionResponse, error) {
	on := req.GetProtected()
	_, err := m.changeFamilies(ctx, req.GetTable(), func(s *tabulapb.TableSchema) error {
		s.DeletionProtection = on
		return nil
	})
	if err == nil {
		m.log.Info("deletion protection switched for table", "table", req.GetTable(), "protected", on)
	}
	return &tabulapb.SetDeletionProtectionResponse{}, toStatus(ctx, err)
}

// changeFamilies applies change to the stored schema (guarded by its
// ModRevision) and pushes the result to the servers of the table.
func (m *Master) changeFamilies(ctx context.Context, table string, change func(*tabulapb.TableSchema) error) (*tabulapb.TableSchema, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return nil, err
	}
	term, err := m.lead(ctx)
	if err != nil {
		return nil, err
	}
	rec, rev, err := meta.GetTable(ctx, m.cli, m.layout, table)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, notFoundf("table %s does not exist", table)
	}
	if err != nil {
		return nil, err
	}
	if rec.Schema.GetState() == meta.TableDeleting {
		return nil, notFoundf("table %s is being deleted", table)
	}
	s := cloneSchema(rec.Schema)
	if err := change(s); err != nil {
		return nil, err
	}
	if _, err := m.putSchema(ctx, term, s, rev); err != nil {
		return nil, err
	}
	m.pushSchema(ctx, s)
	return s, nil
}

// putSchema writes s over the schema at rev; ErrConflict if it changed.
func (m *Master) putSchema(ctx context.Context, term *leadership, s *tabulapb.TableSchema, rev int64) (int64, error) {
	next, err := meta.PutTable(ctx, m.cli, m.layout, meta.TableRecord{Schema: s}, rev, term.guard())
	if errors.Is(err, meta.ErrConflict) {
		return 0, fmt.Errorf("%w: table %s changed concurrently (or leadership was lost); retry", meta.ErrConflict, s.Name)
	}
	return next, err
}

// pushSchema sends s to every live server holding a tablet of its table.
// Failures are logged: the schema is stored, and a tablet loaded later gets
// it with LoadTablet.
func (m *Master) pushSchema(ctx context.Context, s *tabulapb.TableSchema) {
	tablets, _, err := meta.GetTablets(ctx, m.cli, m.layout, s.Name)
	if err != nil {
		m.log.Warn("pushing a schema: reading tablets", "table", s.Name, "err", err)
		return
	}
	req := &tabulapb.UpdateSchemaRequest{Schema: m.serverSchema(s)}
	done := map[string]bool{}
	for _, t := range tablets {
		if t.Address == "" || done[t.Address] {
			continue
		}
		done[t.Address] = true
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			err = m.callServer(ctx, t.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
				_, err := c.UpdateSchema(ctx, req)
				return err
			})
			if err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
		}
		if err != nil {
			m.log.Warn("pushing a schema", "table", s.Name, "server", t.Server, "err", err)
		}
	}
}

// callServer calls a tablet server with the RPC timeout.
func (m *Master) callServer(ctx context.Context, addr string, call func(context.Context, tabulapb.TabletServerClient) error) error {
	c, err := m.conns.client(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.RPCTimeout)
	defer cancel()
	return call(ctx, c)
}

// removeTableFiles removes a deleted table's folder, unless a snapshot
// may hold some of its files: then the GC's sweep removes what no live
// snapshot holds (docs/CONTRACTS.md §4a).
func (m *Master) removeTableFiles(name string) {
	if m.opts.StorageRoot == "" {
		return
	}
	if m.tableHasHolds(name) {
		m.log.Info("deleted table's files are left to the GC: snapshot holds in its folder", "table", name)
		return
	}
	if err := storepath.RemoveTable(m.fs(), m.opts.StorageRoot, name); err != nil {
		m.log.Warn("removing a deleted table's files", "table", name, "err", err)
	}
}

// tableHasHolds reports whether some tablet folder of table holds a
// snapshot hold (or its folder cannot be read: then it may).
func (m *Master) tableHasHolds(table string) bool {
	dir, err := storepath.Table(m.opts.StorageRoot, table)
	if err != nil {
		return true
	}
	entries, err := m.fs().List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	for _, e := range entries {
		if !e.IsDir {
			continue
		}
		if held, err := manifest.HasHolds(m.fs(), filepath.Join(dir, e.Name)); err != nil || held {
			return true
		}
	}
	return false
}
