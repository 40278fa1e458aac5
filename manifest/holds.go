package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/tabuladb/tabula/vfs"
)

// Snapshot holds (docs/CONTRACTS.md §4a).
//
// A hold is a snapshot's record of one tablet's files: a manifest saved in
// <tablet folder>/MANIFEST-snapshots/<id>/, whose files are the tablet's at
// the snapshot's cut, with paths relative to the hold's folder
// (../../<family>/<n>.sst, ../../../<parent>/<family>/<n>.sst). A hold's
// folder reads as a tablet folder (Load, References), so the master's GC
// reads what it references the way it reads a tablet's, and a clone is a
// new folder holding the same state with its paths rebased (Rebase).
//
// The folder's name can be no family's: family folders whose name starts
// with "MANIFEST" get a "~" prefix (tablet's familyFolder), and a tablet's
// listing reads only files named MANIFEST-<epoch>-v<version> (ReadFolder),
// never this folder.

// HoldsDir is the sub-folder of a tablet folder that holds its snapshots'
// holds, one folder per snapshot id.
const HoldsDir = FileName + "-snapshots"

// ValidateHoldID checks a snapshot id used as a hold's folder name: 1 to
// 128 characters of [A-Za-z0-9_.-], starting with a letter, digit or
// underscore (one plain path element, never "." or "..").
func ValidateHoldID(id string) error {
	if len(id) == 0 || len(id) > 128 {
		return fmt.Errorf("manifest: snapshot id %q must be 1 to 128 characters", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		word := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
		if !word && (i == 0 || c != '.' && c != '-') {
			return fmt.Errorf("manifest: snapshot id %q must be characters of A-Z a-z 0-9 _ . - starting with a letter, digit or _", id)
		}
	}
	return nil
}

// HoldDir returns the folder of the hold id in the tablet folder dir.
func HoldDir(dir, id string) string { return filepath.Join(dir, HoldsDir, id) }

// ListHolds lists the ids of the holds in the tablet folder dir; a folder
// without holds gives none and no error.
func ListHolds(fsys vfs.FS, dir string) ([]string, error) {
	entries, err := vfs.Or(fsys).List(filepath.Join(dir, HoldsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest: list holds: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir {
			ids = append(ids, e.Name)
		}
	}
	return ids, nil
}

// SaveHold saves s, a state of the tablet folder dir (paths relative to
// dir), as the hold id: its paths rebased to the hold's folder, no log and
// no replay point (a hold is taken after a flush). It never replaces a
// hold: a second save of one id is an error.
func SaveHold(fsys vfs.FS, dir, id string, s State) error {
	if err := ValidateHoldID(id); err != nil {
		return err
	}
	hd := HoldDir(dir, id)
	if ids, err := List(fsys, hd); err != nil {
		return err
	} else if len(ids) > 0 {
		return fmt.Errorf("manifest: hold %s exists in %s", id, dir)
	}
	if err := vfs.Or(fsys).MkdirAll(hd); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	h, err := Rebase(s, dir, hd)
	if err != nil {
		return err
	}
	h.Log, h.ReplayPoint = "", 0
	return SaveVersion(fsys, hd, ID{Version: 1}, h)
}

// LoadHold reads the hold id of the tablet folder dir, its paths relative
// to the hold's folder. A hold folder without a manifest (a save that
// failed or is under way) is an error wrapping ErrNoTablet.
func LoadHold(fsys vfs.FS, dir, id string) (State, error) {
	if err := ValidateHoldID(id); err != nil {
		return State{}, err
	}
	hd := HoldDir(dir, id)
	s, found, err := Load(fsys, hd)
	if err != nil {
		return State{}, err
	}
	if !found {
		return State{}, fmt.Errorf("%w: hold %s of %s has no manifest", ErrNoTablet, id, dir)
	}
	return s, nil
}

// RemoveHold deletes the hold id's folder (its manifest, never the files
// it names).
func RemoveHold(fsys vfs.FS, dir, id string) error {
	if err := ValidateHoldID(id); err != nil {
		return err
	}
	if err := vfs.Or(fsys).RemoveAll(HoldDir(dir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("manifest: remove hold: %w", err)
	}
	return nil
}

// Rebase returns s, whose file paths are relative to the folder from, with
// each path made relative to the folder to instead (a copy: s is not
// changed). A hold is its tablet's state rebased into the hold's folder; a
// clone is a hold rebased into a new tablet folder.
func Rebase(s State, from, to string) (State, error) {
	out := s
	out.Files = make([]FileRef, len(s.Files))
	for i, f := range s.Files {
		abs := filepath.Join(from, filepath.FromSlash(f.Path))
		rel, err := filepath.Rel(to, abs)
		if err != nil {
			return State{}, fmt.Errorf("manifest: rebase %s from %s to %s: %w", f.Path, from, to, err)
		}
		f.Path = filepath.ToSlash(rel)
		out.Files[i] = f
	}
	return out, nil
}

// HeldFiles returns the paths (joined to the hold's folder and cleaned) of
// the files the hold id of the tablet folder dir names.
func HeldFiles(fsys vfs.FS, dir, id string) ([]string, error) {
	s, err := LoadHold(fsys, dir, id)
	if err != nil {
		return nil, err
	}
	hd := HoldDir(dir, id)
	paths := make([]string, len(s.Files))
	for i, f := range s.Files {
		paths[i] = filepath.Join(hd, filepath.FromSlash(f.Path))
	}
	return paths, nil
}

// HasHolds reports whether the tablet folder dir holds a snapshot hold,
// live or not. A deleter that cannot tell whether a hold is live (it reads
// no etcd) leaves such a folder to the master's GC, which can.
func HasHolds(fsys vfs.FS, dir string) (bool, error) {
	ids, err := ListHolds(fsys, dir)
	return len(ids) > 0, err
}

// SaveClone saves, in the folder to (made if missing), a tablet's first
// manifest whose state is the hold id of the tablet folder dir, its paths
// rebased there: a tablet opened in to reads what the snapshot holds, and
// references its files where they lie (what a clone does; tests read
// snapshots whole this way). It returns the state saved.
func SaveClone(fsys vfs.FS, dir, id, to string) (State, error) {
	s, err := LoadHold(fsys, dir, id)
	if err != nil {
		return State{}, err
	}
	c, err := Rebase(s, HoldDir(dir, id), to)
	if err != nil {
		return State{}, err
	}
	if err := vfs.Or(fsys).MkdirAll(to); err != nil {
		return State{}, fmt.Errorf("manifest: %w", err)
	}
	return c, Save(fsys, to, c)
}
