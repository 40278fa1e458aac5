package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/tabuladb/tabula/vfs"
)

// Folder is what one listing of a tablet folder shows: its manifest
// versions, the temporary files of saves (see SaveVersion) and its
// sub-folders. An opener lists once and answers every question of the
// open from it (which version is newest, which saves of unknown outcome
// to skip, which older epochs' manifests its seal deletes, whether the
// tablet's own log/ folder is there): on an object store each listing is
// a request, and a load's budget is five (docs/CONTRACTS.md §3
// "Manifest").
type Folder struct {
	Dir string
	// IDs are the manifest versions listed, ascending.
	IDs []ID
	// temps are the names of temporary files, each a save's version
	// name with ".tmp".
	temps []string
	// dirs are the sub-folders' names.
	dirs []string
}

// ReadFolder lists dir once. A missing dir is an empty Folder, no error.
func ReadFolder(fsys vfs.FS, dir string) (Folder, error) {
	f := Folder{Dir: dir}
	entries, err := vfs.Or(fsys).List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("manifest: %w", err)
	}
	for _, e := range entries {
		if e.IsDir {
			f.dirs = append(f.dirs, e.Name)
			continue
		}
		if id, ok := parseName(e.Name); ok {
			f.IDs = append(f.IDs, id)
		} else if name, ok := strings.CutSuffix(e.Name, ".tmp"); ok {
			if _, ok := parseName(name); ok {
				f.temps = append(f.temps, e.Name)
			}
		}
	}
	slices.SortFunc(f.IDs, func(a, b ID) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	return f, nil
}

// HasDir reports whether the listing showed the sub-folder name.
func (f Folder) HasDir(name string) bool { return slices.Contains(f.dirs, name) }

// Epochs lists the epochs of the listed manifests, ascending, each once.
func (f Folder) Epochs() []int64 {
	var out []int64
	for _, id := range f.IDs {
		if len(out) == 0 || out[len(out)-1] != id.Epoch {
			out = append(out, id.Epoch)
		}
	}
	return out
}

// Before returns the paths of the listed manifests older than keep and
// of the listed temporary files of versions older than keep (whether or
// not their version ever landed: see SaveVersion), for RemoveFiles.
func (f Folder) Before(keep ID) []string {
	var out []string
	for _, id := range f.IDs {
		if id.Less(keep) {
			out = append(out, filepath.Join(f.Dir, id.Name()))
		}
	}
	for _, name := range f.temps {
		if id, _ := parseName(strings.TrimSuffix(name, ".tmp")); id.Less(keep) {
			out = append(out, filepath.Join(f.Dir, name))
		}
	}
	return out
}

// Load reads the newest manifest of the listing (see the package's Load):
// the newest listed version, or a newer one of its epoch the listing does
// not show yet (Newest). On an FS with whole files (vfs.WholeFiles) the
// newest listed version and the one after it are read at once, one GET
// each, instead of a LIST of each one's parts and a Stat.
func (f Folder) Load(fsys vfs.FS) (State, ID, bool, error) { return f.LoadFor(fsys, 0) }

// LoadFor is Load for an opener at epoch (0: none). On an FS with whole
// files it also makes sure no epoch between the newest listed and epoch
// sealed a version the listing does not show, as it would if it lagged
// behind a newer owner: an owner no longer deletes the older epochs'
// manifests at its seal (they go with its first batch of removals), so a
// listing that lags may show an older epoch's versions still there. The
// owner at an epoch e between them sealed with the version after the
// newest it read: one between the one after the newest listed (fewer if
// the older owner saved late, lateSaves at most) and the one after the
// newest found (the walk that follows a lagging listing). Each of those
// names of each such epoch is asked for, at once, and one found fails the
// open (ErrListingBehind, which wraps fs.ErrNotExist as a listed version
// that is gone: open again later) instead of opening an older state. When
// the newest listed epoch is epoch-1 (a move or a failover whose loads did
// not fail in between) there is nothing to ask.
func (f Folder) LoadFor(fsys vfs.FS, epoch int64) (State, ID, bool, error) {
	fsys = vfs.Or(fsys)
	if len(f.IDs) == 0 {
		return State{}, ID{}, false, nil
	}
	id := f.IDs[len(f.IDs)-1]
	var (
		b   []byte
		err error
	)
	if w, ok := fsys.(vfs.WholeFiles); ok {
		listed := id
		if id, b, err = f.readNewestWhole(w, id); err == nil {
			if err := f.noSealBetween(w, listed, id, epoch); err != nil {
				return State{}, ID{}, false, err
			}
		}
	} else {
		if id, err = probeAfter(fsys, f.Dir, id); err == nil {
			b, err = vfs.ReadFile(fsys, filepath.Join(f.Dir, id.Name()))
		}
	}
	path := filepath.Join(f.Dir, id.Name())
	if errors.Is(err, fs.ErrNotExist) {
		// Never an older version in its place: it may name what is gone.
		return State{}, ID{}, false, fmt.Errorf("%w: %s is listed but gone: the listing lags behind newer versions; open again later: %w", ErrListingBehind, path, err)
	}
	if err != nil {
		return State{}, ID{}, false, fmt.Errorf("manifest: %w", err)
	}
	s, err := decode(path, b)
	if err != nil {
		return State{}, ID{}, false, err
	}
	return s, id, true, nil
}

// readNewestWhole reads id and the versions after it while they exist,
// asking for id and id+1 at once: the newest version is id itself unless
// the listing lags, and the answer for id+1 ("absent") is the probe.
func (f Folder) readNewestWhole(w vfs.WholeFiles, id ID) (ID, []byte, error) {
	next := ID{Epoch: id.Epoch, Version: id.Version + 1}
	var (
		nb   []byte
		nerr error
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		nb, nerr = w.ReadWhole(filepath.Join(f.Dir, next.Name()))
	}()
	b, err := w.ReadWhole(filepath.Join(f.Dir, id.Name()))
	wg.Wait()
	for {
		switch {
		case errors.Is(nerr, fs.ErrNotExist):
			return id, b, err
		case nerr != nil:
			return id, nil, fmt.Errorf("looking for a version the listing may not show yet: %w", nerr)
		}
		// The listing lags: the owner counted its versions up one by
		// one, so ask for each next one until one is absent.
		id, b, err = next, nb, nil
		next = ID{Epoch: id.Epoch, Version: id.Version + 1}
		nb, nerr = w.ReadWhole(filepath.Join(f.Dir, next.Name()))
	}
}

// lateSaves is how many versions an older owner may save after a newer
// owner read its newest (a flush and a compaction it had under way when
// it was paused, and a last one): a listing may show those and not the
// newer owner's seal, whose version is then at most lateSaves below the
// newest listed.
const lateSaves = 3

// noSealBetween asks for the versions listed+1-lateSaves .. newest+1 of
// every epoch after newest's and before epoch (see LoadFor) and fails if
// one exists.
func (f Folder) noSealBetween(w vfs.WholeFiles, listed, newest ID, epoch int64) error {
	var names []string
	for e := newest.Epoch + 1; e < epoch; e++ {
		for v := max(listed.Version+1, lateSaves+1) - lateSaves; v <= newest.Version+1; v++ {
			names = append(names, ID{Epoch: e, Version: v}.Name())
		}
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			_, err := w.ReadWhole(filepath.Join(f.Dir, name))
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				errs[i] = fmt.Errorf("manifest: looking for a newer owner's seal the listing may not show: %w", err)
			default:
				errs[i] = fmt.Errorf("%w: %s exists though the listing shows epoch %d as the newest: it lags behind a newer owner; open again later: %w", ErrListingBehind, filepath.Join(f.Dir, name), newest.Epoch, fs.ErrNotExist)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Pending returns the saves of epoch after version after whose outcome is
// unknown (see Pending): the listed temporary files, and the saves this
// process failed to finish on an FS with whole files (whose temporary file
// may not have been written: see SaveVersion).
func (f Folder) Pending(fsys vfs.FS, epoch int64, after uint64) Pending {
	fsys = vfs.Or(fsys)
	p := pendingInProcess(fsys, f.Dir, epoch, after)
	for _, name := range f.temps {
		id, _ := parseName(strings.TrimSuffix(name, ".tmp"))
		if id.Epoch != epoch || id.Version <= after {
			continue
		}
		p.Version = max(p.Version, id.Version)
		path := filepath.Join(f.Dir, name)
		if b, err := readWhole(fsys, path); err == nil {
			if st, err := decode(path, b); err == nil {
				p.NextFileNum = max(p.NextFileNum, st.NextFileNum)
			}
		}
	}
	return p
}

// RemoveFiles deletes the manifests and temporary files at paths (from
// Folder.Before): in one request per 1,000 on an FS with whole files,
// else one Remove each. Missing files are not an error.
func RemoveFiles(fsys vfs.FS, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	fsys = vfs.Or(fsys)
	if w, ok := fsys.(vfs.WholeFiles); ok {
		if err := w.RemoveWhole(paths); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		return nil
	}
	var errs []error
	for _, p := range paths {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("manifest: %w", err))
		}
	}
	return errors.Join(errs...)
}

// readWhole reads a manifest file: one request on an FS with whole files.
func readWhole(fsys vfs.FS, path string) ([]byte, error) {
	if w, ok := fsys.(vfs.WholeFiles); ok {
		return w.ReadWhole(path)
	}
	return vfs.ReadFile(fsys, path)
}

// holds returns nil if the file at path holds exactly b.
func holds(fsys vfs.FS, path string, b []byte) error {
	got, err := readWhole(fsys, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("absent, the save may still land")
	case err != nil:
		return err
	case !bytes.Equal(got, b):
		return errors.New("it holds other bytes")
	}
	return nil
}

// The saves of unknown outcome this process made on an FS with whole
// files, by folder. Their temporary file is written after the failure
// (see SaveVersion) and may fail too; a reopen at the same epoch happens
// in the process that held the tablet (a restarted server registers
// under a new lease, and the master assigns every tablet again at a new
// epoch: docs/OWNERSHIP.md), so this record covers it.
var inProcess struct {
	sync.Mutex
	m map[pendingKey]pendingSave
}

type pendingKey struct {
	fsys any // the FS when its type is comparable, else nil
	dir  string
}

type pendingSave struct {
	epoch       int64
	version     uint64
	nextFileNum uint64
}

func keyOf(fsys vfs.FS, dir string) pendingKey {
	k := pendingKey{dir: filepath.Clean(dir)}
	if reflect.TypeOf(fsys).Comparable() {
		k.fsys = fsys
	}
	return k
}

// notePending records a save of unknown outcome of id whose state reserves
// file numbers below nextFileNum.
func notePending(fsys vfs.FS, dir string, id ID, nextFileNum uint64) {
	inProcess.Lock()
	defer inProcess.Unlock()
	if inProcess.m == nil {
		inProcess.m = map[pendingKey]pendingSave{}
	}
	k := keyOf(fsys, dir)
	p := inProcess.m[k]
	if p.epoch != id.Epoch {
		p = pendingSave{epoch: id.Epoch}
	}
	p.version, p.nextFileNum = max(p.version, id.Version), max(p.nextFileNum, nextFileNum)
	inProcess.m[k] = p
}

func pendingInProcess(fsys vfs.FS, dir string, epoch int64, after uint64) Pending {
	inProcess.Lock()
	defer inProcess.Unlock()
	p, ok := inProcess.m[keyOf(fsys, dir)]
	if !ok || p.epoch != epoch || p.version <= after {
		return Pending{}
	}
	return Pending{Version: p.version, NextFileNum: p.nextFileNum}
}
