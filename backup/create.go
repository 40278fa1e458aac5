package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/vfs"
)

// Cluster is what a backup needs of the cluster: its snapshots
// (client.AdminClient).
type Cluster interface {
	CreateSnapshot(ctx context.Context, table, name string) (client.SnapshotInfo, error)
	SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error)
	DeleteSnapshot(ctx context.Context, name string) error
}

// CreateOptions says what to back up and where.
type CreateOptions struct {
	Table string
	To    *Location
	// Source and SourceRoot are the cluster's storage (--storage), where
	// the snapshot's holds and files are read.
	Source     vfs.FS
	SourceRoot string
	Cluster    Cluster
	// Snapshot, when set, is a ready snapshot of Table to copy, kept
	// afterwards; otherwise the backup takes one and deletes it when done.
	Snapshot string
	// Expire, when positive, records an expiry that long after the start.
	Expire time.Duration
	// Workers copies that many files at once (default 4).
	Workers int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnPlan is told the files and bytes the backup names once it knows
	// them; OnBytes each chunk of bytes copied, checked or found present.
	OnPlan  func(files int, bytes int64)
	OnBytes func(n int64)
	// OnCopied is called after each file copied (tests stop the process
	// there, docs/CONTRACTS.md §7).
	OnCopied func(rel string)
}

// Result is what Create did.
type Result struct {
	Manifest *Manifest
	// Copied files were copied now; Present ones were at the location
	// already with a size and checksum a complete backup there recorded;
	// Resumed ones were there without a manifest naming them (an
	// interrupted run's) and were read back to checksum them.
	Copied, Present, Resumed int
	CopiedBytes              int64
	// Resumed names the unfinished backup this run completed, if any.
	ResumedBackup string
}

// started is the STARTED marker: what a run needs to resume.
type started struct {
	Name          string `json:"name"`
	Table         string `json:"table"`
	Snapshot      string `json:"snapshot"`
	OwnSnapshot   bool   `json:"own_snapshot"`
	StartedMicros int64  `json:"started_unix_micros"`
	ExpiresMicros int64  `json:"expires_unix_micros,omitempty"`
}

// plainName maps a table name onto the characters a snapshot name allows.
func plainName(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// tabletFileRel returns the path under files/ of the file p (relative to
// the folder of tablet id of table), refusing one outside the table.
func tabletFileRel(table, id, p string) (string, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return "", err
	}
	if err := storepath.ValidateTabletID(id); err != nil {
		return "", err
	}
	rel := path.Join(table, id, p)
	if !strings.HasPrefix(rel, table+"/") || validRel(rel) != nil {
		return "", fmt.Errorf("backup: tablet %s names %s, outside its table's folder", id, p)
	}
	return rel, nil
}

// Create backs up opts.Table to opts.To. An unfinished backup of the table
// at the location (a run that was interrupted) is completed instead of
// starting another: its snapshot is used again if it still exists, and
// the files it finished are not copied again.
func Create(ctx context.Context, opts CreateOptions) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if err := cell.ValidateTableName(opts.Table); err != nil {
		return nil, err
	}
	loc := opts.To
	res := &Result{}
	now := opts.Now()
	// One read of the location's backups: the unfinished one to complete,
	// and the files the complete ones recorded.
	infos, err := List(loc)
	if err != nil {
		return nil, err
	}
	st := findUnfinished(infos, opts.Table, opts.Snapshot)
	if st != nil {
		res.ResumedBackup = st.Name
	} else {
		name := plainName(opts.Table) + "." + now.UTC().Format("20060102T150405.000Z")
		st = &started{Name: name, Table: opts.Table, Snapshot: opts.Snapshot, StartedMicros: now.UnixMicro()}
		if opts.Snapshot == "" {
			st.Snapshot, st.OwnSnapshot = ownSnapshotName(name), true
		}
		if opts.Expire > 0 {
			st.ExpiresMicros = now.Add(opts.Expire).UnixMicro()
		}
		if _, err := loc.readSmall(filepath.Join(loc.backupDir(name), ManifestFile)); err == nil {
			return nil, fmt.Errorf("backup: a backup named %s exists at %s (one backup per table per millisecond)", name, loc)
		}
		b, _ := json.Marshal(st)
		// Written before the snapshot is taken: a run killed after it names
		// the snapshot to use again or to delete.
		if err := loc.writeSmall(filepath.Join(loc.backupDir(name), StartedFile), b); err != nil {
			return nil, fmt.Errorf("backup: starting %s at %s: %w", name, loc, err)
		}
	}
	rec, err := opts.Cluster.SnapshotRecord(ctx, st.Snapshot)
	if err != nil && st.OwnSnapshot && isNotFound(err) {
		if _, err = opts.Cluster.CreateSnapshot(ctx, opts.Table, st.Snapshot); err == nil {
			rec, err = opts.Cluster.SnapshotRecord(ctx, st.Snapshot)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("backup: snapshot %s of table %s: %w", st.Snapshot, opts.Table, err)
	}
	if rec.GetTable() != opts.Table || rec.GetState() != "ready" {
		return nil, fmt.Errorf("backup: snapshot %s is of table %s and %s; want a ready snapshot of %s", st.Snapshot, rec.GetTable(), rec.GetState(), opts.Table)
	}
	m, err := plan(opts, st, rec)
	if err != nil {
		return nil, err
	}
	if err := copyAll(ctx, opts, m, knownFiles(infos), res); err != nil {
		return nil, err
	}
	b, err := m.Encode()
	if err != nil {
		return nil, err
	}
	dir := loc.backupDir(m.Name)
	if err := loc.writeSmall(filepath.Join(dir, ManifestFile), b); err != nil {
		return nil, fmt.Errorf("backup: writing the manifest of %s: %w", m.Name, err)
	}
	res.Manifest = m
	if err := loc.removeSmall(filepath.Join(dir, StartedFile)); err != nil {
		return res, fmt.Errorf("backup: %s is complete; removing its STARTED marker: %w", m.Name, err)
	}
	if st.OwnSnapshot {
		if err := opts.Cluster.DeleteSnapshot(ctx, st.Snapshot); err != nil && !isNotFound(err) {
			return res, fmt.Errorf("backup: %s is complete; deleting its snapshot %s (delete it with tabula snapshot delete): %w", m.Name, st.Snapshot, err)
		}
	}
	return res, nil
}

// ownSnapshotName names the snapshot a backup takes: backup-<name>, cut
// from the front to a snapshot name's 100 characters (a long namespaced
// table's), keeping the time that makes it unique.
func ownSnapshotName(name string) string {
	const prefix, most = "backup-", 100
	if len(prefix)+len(name) > most {
		name = name[len(name)-(most-len(prefix)):]
		name = strings.TrimLeft(name, ".-")
	}
	return prefix + name
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// findUnfinished returns the newest unfinished backup of table in infos
// (of the snapshot snap when it is set), or nil.
func findUnfinished(infos []Info, table, snap string) *started {
	var out *started
	for _, in := range infos {
		if in.Complete || in.Table != table || in.started == nil || (snap != "" && in.started.Snapshot != snap) || (snap == "" && !in.started.OwnSnapshot) {
			continue
		}
		if out == nil || in.started.StartedMicros > out.StartedMicros {
			out = in.started
		}
	}
	return out
}

// plan builds the manifest of the snapshot rec: each tablet's hold read
// from the source and rebased to the tablet's folder, and the distinct
// files they name with their sizes (checksums come with the copies).
func plan(opts CreateOptions, st *started, rec *tabulapb.Snapshot) (*Manifest, error) {
	schema, err := protojson.Marshal(rec.GetSchema())
	if err != nil {
		return nil, fmt.Errorf("backup: schema: %w", err)
	}
	m := &Manifest{Name: st.Name, Table: st.Table, Snapshot: rec.GetName(), SnapshotID: rec.GetId(), OwnSnapshot: st.OwnSnapshot,
		CreatedMicros: rec.GetCreatedUnixMicros(), ExpiresMicros: st.ExpiresMicros, Schema: schema}
	sizes := map[string]int64{}
	for _, t := range rec.GetTablets() {
		dir, err := storepath.Tablet(opts.SourceRoot, st.Table, t.GetTabletId())
		if err != nil {
			return nil, err
		}
		hold, err := manifest.LoadHold(opts.Source, dir, rec.GetId())
		if err != nil {
			return nil, fmt.Errorf("backup: the hold of tablet %s: %w", t.GetTabletId(), err)
		}
		s, err := manifest.Rebase(hold, manifest.HoldDir(dir, rec.GetId()), dir)
		if err != nil {
			return nil, err
		}
		for _, f := range s.Files {
			rel, err := tabletFileRel(st.Table, t.GetTabletId(), f.Path)
			if err != nil {
				return nil, err
			}
			sizes[rel] = int64(f.Size)
		}
		m.Tablets = append(m.Tablets, Tablet{ID: t.GetTabletId(), State: s})
	}
	for rel, size := range sizes {
		m.Files = append(m.Files, File{Path: rel, Size: size})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	return m, nil
}

// copyAll fills in m.Files' checksums, copying the files the location
// lacks with opts.Workers at once.
func copyAll(ctx context.Context, opts CreateOptions, m *Manifest, known map[string]File, res *Result) error {
	loc := opts.To
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	if opts.OnPlan != nil {
		opts.OnPlan(len(m.Files), total)
	}
	onBytes := opts.OnBytes
	if onBytes == nil {
		onBytes = func(int64) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu                        sync.Mutex
		firstErr                  error
		copied, presentN, resumed atomic.Int64
		copiedBytes               atomic.Int64
		next                      atomic.Int64
		wg                        sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	// One listing per folder tells which files are present: on an object
	// store a LIST per folder instead of a Stat (two LISTs) per file.
	present := map[string]bool{}
	listed := map[string]bool{}
	for _, f := range m.Files {
		dir := path.Dir(f.Path)
		if listed[dir] {
			continue
		}
		listed[dir] = true
		ents, err := loc.FS.List(loc.file(dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("backup: listing %s at %s: %w", dir, loc, err)
		}
		for _, e := range ents {
			if !e.IsDir {
				present[dir+"/"+e.Name] = true
			}
		}
	}
	one := func(f *File) error {
		src := filepath.Join(storepath.Tables(opts.SourceRoot), filepath.FromSlash(f.Path))
		if present[f.Path] {
			if k, ok := known[f.Path]; ok && k.Size == f.Size {
				// Files are immutable and named once: the recorded file is
				// this one (verify checks the bytes).
				f.CRC32C = k.CRC32C
				presentN.Add(1)
				onBytes(f.Size)
				return nil
			}
			info, err := loc.FS.Stat(loc.file(f.Path))
			if err != nil {
				return fmt.Errorf("backup: %s at %s: %w", f.Path, loc, err)
			}
			if info.Size != f.Size {
				return fmt.Errorf("backup: %s at %s has %d bytes, but the snapshot's file has %d: not a copy of it (delete it, or back up elsewhere)", f.Path, loc, info.Size, f.Size)
			}
			// An interrupted run's copy: whole (a file appears at its name
			// only once synced), but no manifest recorded its checksum.
			n, crc, err := loc.checksum(ctx, f.Path, onBytes)
			if err != nil {
				return fmt.Errorf("backup: reading back %s: %w", f.Path, err)
			}
			if n != f.Size {
				return fmt.Errorf("backup: %s at %s reads %d bytes, want %d", f.Path, loc, n, f.Size)
			}
			f.CRC32C = crc
			resumed.Add(1)
			return nil
		}
		n, crc, err := loc.copyFile(ctx, opts.Source, src, f.Path, onBytes)
		if err != nil {
			return err
		}
		if n != f.Size {
			return fmt.Errorf("backup: copied %d bytes of %s, its manifest says %d", n, src, f.Size)
		}
		f.CRC32C = crc
		copied.Add(1)
		copiedBytes.Add(n)
		if opts.OnCopied != nil {
			opts.OnCopied(f.Path)
		}
		return nil
	}
	for range min(opts.Workers, max(len(m.Files), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(m.Files) || ctx.Err() != nil {
					return
				}
				if err := one(&m.Files[i]); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Copied, res.Present, res.Resumed = int(copied.Load()), int(presentN.Load()), int(resumed.Load())
	res.CopiedBytes = copiedBytes.Load()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// knownFiles returns the files the complete backups of infos record.
func knownFiles(infos []Info) map[string]File {
	known := map[string]File{}
	for _, in := range infos {
		if in.manifest == nil {
			continue
		}
		for _, f := range in.manifest.Files {
			known[f.Path] = f
		}
	}
	return known
}
