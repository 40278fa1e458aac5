package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

// Info is one backup of a location, complete or not.
type Info struct {
	Name, Table string
	// Complete is true when the manifest was written; an unfinished
	// backup (its run interrupted or still going) has only STARTED.
	Complete bool
	// Created is the snapshot's time (the start time while unfinished).
	Created time.Time
	// Expires is zero for a backup kept until deleted.
	Expires  time.Time
	Files    int
	Bytes    int64
	Tablets  int
	Snapshot string
	manifest *Manifest
	started  *started
}

// List returns the backups at loc by name. A backup whose manifest does
// not decode is an error naming it.
func List(loc *Location) ([]Info, error) {
	ents, err := loc.FS.List(filepath.Join(loc.Root, BackupsFolder))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup: listing %s: %w", loc, err)
	}
	var out []Info
	for _, e := range ents {
		if !e.IsDir || validName(e.Name) != nil {
			continue
		}
		in, err := read(loc, e.Name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a backup being deleted
		}
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// read reads the backup name: its manifest, else its STARTED marker; a
// folder with neither gives fs.ErrNotExist.
func read(loc *Location, name string) (Info, error) {
	dir := loc.backupDir(name)
	b, err := loc.readSmall(filepath.Join(dir, ManifestFile))
	if err == nil {
		m, err := Decode(filepath.Join(dir, ManifestFile), b)
		if err != nil {
			return Info{}, err
		}
		in := Info{Name: m.Name, Table: m.Table, Complete: true, Created: time.UnixMicro(m.CreatedMicros).UTC(),
			Files: len(m.Files), Bytes: m.Bytes(), Tablets: len(m.Tablets), Snapshot: m.Snapshot, manifest: m}
		if m.ExpiresMicros != 0 {
			in.Expires = time.UnixMicro(m.ExpiresMicros).UTC()
		}
		return in, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("backup: reading %s: %w", name, err)
	}
	b, err = loc.readSmall(filepath.Join(dir, StartedFile))
	if err != nil {
		return Info{}, err
	}
	var st started
	if err := json.Unmarshal(b, &st); err != nil || st.Name != name {
		return Info{}, fmt.Errorf("%w: %s: bad STARTED marker", ErrCorrupt, name)
	}
	in := Info{Name: name, Table: st.Table, Created: time.UnixMicro(st.StartedMicros).UTC(), Snapshot: st.Snapshot, started: &st}
	if st.ExpiresMicros != 0 {
		in.Expires = time.UnixMicro(st.ExpiresMicros).UTC()
	}
	return in, nil
}

// Describe returns the manifest of the complete backup name.
func Describe(loc *Location, name string) (*Manifest, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	in, err := read(loc, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup: no backup %s at %s", name, loc)
	}
	if err != nil {
		return nil, err
	}
	if !in.Complete {
		return nil, fmt.Errorf("backup: %s at %s is unfinished (run backup create %s again to complete it, or delete it)", name, loc, in.Table)
	}
	return in.manifest, nil
}

// DeleteResult is what Delete removed.
type DeleteResult struct {
	Files int
	Bytes int64
}

// Delete removes the backup name: its manifest first (so an interrupted
// delete leaves an unfinished backup, never a complete one missing files),
// then the files no other complete backup at loc names, then its folder.
// An unfinished backup's files are not listed anywhere: deleting one
// removes the files of its table no complete backup names, unless another
// unfinished backup of the table may still need them.
func Delete(ctx context.Context, loc *Location, name string) (DeleteResult, error) {
	var res DeleteResult
	if err := validName(name); err != nil {
		return res, err
	}
	in, err := read(loc, name)
	if errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("backup: no backup %s at %s", name, loc)
	}
	if err != nil {
		return res, err
	}
	all, err := List(loc)
	if err != nil {
		return res, err
	}
	keep := map[string]bool{}
	otherUnfinished := false
	for _, o := range all {
		if o.Name == name {
			continue
		}
		if o.manifest != nil {
			for _, f := range o.manifest.Files {
				keep[f.Path] = true
			}
		} else if o.Table == in.Table {
			otherUnfinished = true
		}
	}
	dir := loc.backupDir(name)
	var candidates []File
	if in.manifest != nil {
		candidates = in.manifest.Files
		if err := loc.removeSmall(filepath.Join(dir, ManifestFile)); err != nil {
			return res, fmt.Errorf("backup: removing the manifest of %s: %w", name, err)
		}
	} else if !otherUnfinished {
		if candidates, err = walkFiles(loc, in.Table); err != nil {
			return res, err
		}
	}
	var gone []string
	for _, f := range candidates {
		if !keep[f.Path] {
			gone = append(gone, loc.file(f.Path))
			res.Files++
			res.Bytes += f.Size
		}
	}
	if err := removeFiles(loc.FS, gone); err != nil {
		return res, fmt.Errorf("backup: removing the files of %s: %w", name, err)
	}
	if err := loc.FS.RemoveAll(dir); err != nil {
		return res, fmt.Errorf("backup: removing %s: %w", dir, err)
	}
	return res, ctx.Err()
}

// removeFiles removes names (missing ones are no error): in batches on an
// object store, one by one on a disk.
func removeFiles(fsys vfs.FS, names []string) error {
	if w, ok := fsys.(vfs.WholeFiles); ok {
		for len(names) > 0 {
			n := min(len(names), 1000)
			if err := w.RemoveWhole(names[:n]); err != nil {
				return err
			}
			names = names[n:]
		}
		return nil
	}
	for _, n := range names {
		if err := fsys.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// walkFiles lists the files under files/<table>/ with their sizes.
func walkFiles(loc *Location, table string) ([]File, error) {
	var out []File
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := loc.FS.List(loc.file(rel))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			r := rel + "/" + e.Name
			if e.IsDir {
				if err := walk(r); err != nil {
					return err
				}
				continue
			}
			info, err := loc.FS.Stat(loc.file(r))
			if err != nil {
				return err
			}
			out = append(out, File{Path: r, Size: info.Size})
		}
		return nil
	}
	if err := validRel(table); err != nil {
		return nil, err
	}
	return out, walk(table)
}

// Damage is a file of a backup that is missing or does not read as
// copied.
type Damage struct {
	Path    string
	Problem string
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Files   int
	Bytes   int64
	Damaged []Damage
}

// Verify reads every file of the backup name whole, workers at once, and
// checks its size and CRC32C against the manifest; every file missing or
// different is in the report's Damaged. onBytes sees the bytes read.
func Verify(ctx context.Context, loc *Location, name string, workers int, onBytes func(int64)) (*VerifyReport, error) {
	m, err := Describe(loc, name)
	if err != nil {
		return nil, err
	}
	if workers <= 0 {
		workers = 4
	}
	rep := &VerifyReport{Files: len(m.Files)}
	var mu sync.Mutex
	jobs := make(chan File)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				n, crc, err := loc.checksum(ctx, f.Path, onBytes)
				problem := ""
				switch {
				case errors.Is(err, fs.ErrNotExist):
					problem = "missing"
				case err != nil:
					problem = "unreadable: " + err.Error()
				case n != f.Size:
					problem = fmt.Sprintf("%d bytes, the manifest says %d", n, f.Size)
				case crc != f.CRC32C:
					problem = fmt.Sprintf("CRC32C %08x, the manifest says %08x", crc, f.CRC32C)
				}
				mu.Lock()
				rep.Bytes += n
				if problem != "" {
					rep.Damaged = append(rep.Damaged, Damage{Path: f.Path, Problem: problem})
				}
				mu.Unlock()
			}
		}()
	}
	for _, f := range m.Files {
		if ctx.Err() != nil {
			break
		}
		jobs <- f
	}
	close(jobs)
	wg.Wait()
	sort.Slice(rep.Damaged, func(i, j int) bool { return rep.Damaged[i].Path < rep.Damaged[j].Path })
	return rep, ctx.Err()
}
