package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/vfs"
)

// ErrCorrupt marks a MANIFEST that cannot be trusted: bad magic line,
// unknown format version, checksum mismatch or an undecodable state. Errors
// wrapping it name the file. It wraps corruption.ErrCorrupt.
var ErrCorrupt = corruption.New("manifest: corrupt")

// ErrMaybeSaved marks a save whose outcome is unknown: the new version may
// be in place (a rename that was carried out but not made durable, or
// whose answer was lost), may land later (a store call still on its way
// after the caller's deadline), or may never. Either the old or the new
// state may be read from now on, so every file the new state names must
// be kept (docs/CONTRACTS.md §7).
var ErrMaybeSaved = errors.New("manifest: maybe saved")

// ErrListingBehind marks a load that found the folder's listing behind
// what a read by name finds (a listed version gone, a newer owner's seal
// not listed): no state is opened in place of the newest, and a load
// later, once the listing caught up, succeeds. Such errors also wrap
// fs.ErrNotExist.
var ErrListingBehind = errors.New("manifest: the listing lags behind the folder")

// FileRef is one SSTable a tablet reads.
type FileRef struct {
	Family string `json:"family"`
	// Path is relative to the tablet folder, e.g. "cf1/000012.sst", or
	// "../<parentTablet>/cf1/000007.sst" for a split child's reference to
	// its parent's file.
	Path    string `json:"path"`
	FileNum uint64 `json:"file_num"`
	// Lower and Upper bound the encoded keys this tablet may read from the
	// file: [Lower, Upper); nil is unbounded. They are set for split
	// references. An empty bound is stored as nil.
	Lower []byte `json:"lower,omitempty"`
	Upper []byte `json:"upper,omitempty"`

	Size          uint64 `json:"size"`
	NumCells      uint64 `json:"num_cells"`
	NumTombstones uint64 `json:"num_tombstones"`
	MinTimestamp  int64  `json:"min_timestamp"`
	MaxTimestamp  int64  `json:"max_timestamp"`
	MinSeq        uint64 `json:"min_seq"`
	MaxSeq        uint64 `json:"max_seq"`

	// NumEntries, SmallestKey and LargestKey are the file's properties
	// (sstable.Properties) that a load needs to place the file without
	// opening it: its key range decides the family's sorted runs, which
	// files a read or a split's reference needs, and its entries size a
	// compaction's output. Recorded since format version 2, so that a load
	// on an object store reads no file's tail (the file is opened on its
	// first read). NumEntries 0 means not recorded (format version 1, or
	// a state built without them): the engine opens the file at load to
	// learn them, as before. A written SSTable holds at least one entry.
	// The keys are the whole file's, whatever Lower and Upper say.
	NumEntries  uint64 `json:"num_entries,omitempty"`
	SmallestKey []byte `json:"smallest_key,omitempty"`
	LargestKey  []byte `json:"largest_key,omitempty"`
}

// WithoutKeys returns s with no file's keys recorded (a copy: s is not
// changed), which Save writes as format version 1.
func (s State) WithoutKeys() State {
	files := make([]FileRef, len(s.Files))
	for i, f := range s.Files {
		f.NumEntries, f.SmallestKey, f.LargestKey = 0, nil, nil
		files[i] = f
	}
	if s.Files != nil {
		s.Files = files
	}
	return s
}

// HasKeys reports whether the record holds the file's key range and
// entry count (NumEntries, SmallestKey, LargestKey), so that the file
// need not be opened to learn them.
func (f FileRef) HasKeys() bool { return f.NumEntries > 0 }

// State is everything a manifest records.
type State struct {
	// Files lists the live SSTables of all families. Save keeps the order
	// it is given (the engine keeps each family's files newest first).
	Files []FileRef `json:"files,omitempty"`
	// ReplayPoint is the commit-log segment number to replay from.
	ReplayPoint uint64 `json:"replay_point"`
	// Log names the tablet server's shared commit log (sharedlog) that
	// holds the tablet's records after ReplayPoint, written at the
	// manifest's epoch; empty means the tablet's own log/ folder.
	Log string `json:"log,omitempty"`
	// LastSeq is the highest sequence number contained in Files.
	LastSeq     uint64 `json:"last_seq"`
	NextFileNum uint64 `json:"next_file_num"`
	// RangeStart and RangeEnd are the tablet's row range [start, end) as
	// raw rows; nil is unbounded. An empty bound is stored as nil.
	RangeStart []byte `json:"range_start,omitempty"`
	RangeEnd   []byte `json:"range_end,omitempty"`
	// Parent is the parent tablet's id on a split child (informational).
	Parent string `json:"parent,omitempty"`
}

// File names inside the tablet folder.
const FileName = "MANIFEST"

// MANIFEST layout (text, so operators can read it):
//
//	tabula-manifest 2\n          magic word and format version
//	{...state as JSON...}\n      one line; []byte fields are base64
//	crc32c 1a2b3c4d\n            CRC32C (Castagnoli) of every byte above, 8 hex digits
//
// Format version 2 added each file's num_entries, smallest_key and
// largest_key (FileRef.HasKeys); version 1 has no such fields and is
// still read, its files opened at load to learn them. Save writes the
// lowest version that holds the state: 1 when no file records its keys
// (State.WithoutKeys), so that a cluster whose older servers may still
// load its tablets (releases before version 2 refuse it: "unknown format
// version") can keep writing what they read (docs/OPERATIONS.md
// "Upgrading in place").
const (
	magic         = "tabula-manifest"
	formatVersion = 2
	crcPrefix     = "crc32c "
)

// formatKeys is the first format version whose files record their keys.
const formatKeys = 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the MANIFEST bytes of s.
func encode(s State) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("manifest: encode: %w", err)
	}
	version := 1
	for _, f := range s.Files {
		if f.HasKeys() {
			version = formatKeys
			break
		}
	}
	b := fmt.Appendf(nil, "%s %d\n", magic, version)
	b = append(b, body...)
	b = append(b, '\n')
	return seal(b), nil
}

// seal appends the checksum trailer to content.
func seal(content []byte) []byte {
	return fmt.Appendf(content, "%s%08x\n", crcPrefix, crc32.Checksum(content, castagnoli))
}

// decode parses MANIFEST bytes; name is used in errors.
func decode(name string, b []byte) (State, error) {
	bad := func(format string, args ...any) (State, error) {
		return State{}, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	// The trailer is the last line.
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return bad("missing trailer (torn write?)")
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if i < 0 {
		return bad("missing trailer (torn write?)")
	}
	content, trailer := b[:i+1], b[i+1:len(b)-1]
	hex, ok := bytes.CutPrefix(trailer, []byte(crcPrefix))
	if !ok || len(hex) != 8 {
		return bad("bad checksum trailer")
	}
	want, err := strconv.ParseUint(string(hex), 16, 32)
	if err != nil {
		return bad("bad checksum trailer")
	}
	if got := crc32.Checksum(content, castagnoli); got != uint32(want) {
		return bad("checksum mismatch: file says %08x, content has %08x", want, got)
	}
	header, body, ok := bytes.Cut(content, []byte("\n"))
	if !ok {
		return bad("missing magic line")
	}
	word, ver, ok := bytes.Cut(header, []byte(" "))
	if !ok || string(word) != magic {
		return bad("bad magic line %q", header)
	}
	version, err := strconv.Atoi(string(ver))
	if err != nil || version < 1 || version > formatVersion || strconv.Itoa(version) != string(ver) {
		return bad("unknown format version %q", ver)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return bad("decode state: %v", err)
	}
	if dec.More() {
		return bad("trailing data after state")
	}
	if err := s.check(); err != nil {
		return bad("%v", err)
	}
	if version < formatKeys {
		for _, f := range s.Files {
			if f.NumEntries != 0 || len(f.SmallestKey) != 0 || len(f.LargestKey) != 0 {
				return bad("file %s records keys, which format version %d has not", f.Path, version)
			}
		}
	}
	s.normalize()
	return s, nil
}

// normalize turns empty bounds and lists into nil, so that what Load returns
// does not depend on how a writer spelled "none".
func (s *State) normalize() {
	s.RangeStart, s.RangeEnd = nilIfEmpty(s.RangeStart), nilIfEmpty(s.RangeEnd)
	if len(s.Files) == 0 {
		s.Files = nil
	}
	for i := range s.Files {
		f := &s.Files[i]
		f.Lower, f.Upper = nilIfEmpty(f.Lower), nilIfEmpty(f.Upper)
		f.SmallestKey, f.LargestKey = nilIfEmpty(f.SmallestKey), nilIfEmpty(f.LargestKey)
	}
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// check reports a state no engine could have saved.
func (s *State) check() error {
	for i, f := range s.Files {
		if f.Family == "" || f.Path == "" {
			return fmt.Errorf("file %d has no family or path", i)
		}
		if f.MinSeq > f.MaxSeq {
			return fmt.Errorf("file %s: min seq %d > max seq %d", f.Path, f.MinSeq, f.MaxSeq)
		}
		// Keys are recorded with the count or not at all: a load trusts
		// them in place of the file's own properties.
		switch {
		case f.NumEntries == 0 && (len(f.SmallestKey) != 0 || len(f.LargestKey) != 0):
			return fmt.Errorf("file %s: keys recorded without an entry count", f.Path)
		case f.NumEntries > 0 && (len(f.SmallestKey) == 0 || len(f.LargestKey) == 0):
			return fmt.Errorf("file %s: %d entries recorded without their keys", f.Path, f.NumEntries)
		case f.NumEntries > 0 && bytes.Compare(f.SmallestKey, f.LargestKey) > 0:
			return fmt.Errorf("file %s: smallest key above the largest", f.Path)
		}
	}
	return nil
}

// Manifest files are named by the epoch of the owner that wrote them
// (docs/OWNERSHIP.md) and a version the owner counts up from 1 with every
// save: MANIFEST-<epoch>-v<version>, both decimal. Every save writes a new
// file and never rewrites one in place (on an object store, a new object
// per version); the newest epoch wins, and within it the newest version.
// The names of releases before versions, MANIFEST (epoch 0) and
// MANIFEST-<epoch>, read as version 0 of their epoch. An owner that lost
// its tablet (a zombie that wakes after its lease expired) can still save
// versions of its own old epoch, but nobody reads them again once the next
// owner has saved a version of its newer epoch.

// ID names one manifest version.
type ID struct {
	Epoch   int64
	Version uint64
}

// Less orders IDs: by epoch, then version.
func (a ID) Less(b ID) bool {
	return a.Epoch < b.Epoch || a.Epoch == b.Epoch && a.Version < b.Version
}

// Name returns the file name of id.
func (id ID) Name() string {
	if id.Version == 0 { // a name of the releases before versions
		return Name(id.Epoch)
	}
	return FileName + "-" + strconv.FormatInt(id.Epoch, 10) + "-v" + strconv.FormatUint(id.Version, 10)
}

// Name returns the unversioned file name of epoch (version 0).
func Name(epoch int64) string {
	if epoch <= 0 {
		return FileName
	}
	return FileName + "-" + strconv.FormatInt(epoch, 10)
}

// parseName returns the ID of a manifest file name.
func parseName(name string) (ID, bool) {
	if name == FileName {
		return ID{}, true
	}
	rest, ok := strings.CutPrefix(name, FileName+"-")
	if !ok {
		return ID{}, false
	}
	ep, ver, versioned := strings.Cut(rest, "-v")
	e, ok := parseDecimal(ep, !versioned)
	if !ok {
		return ID{}, false
	}
	if !versioned {
		return ID{Epoch: e}, true
	}
	v, ok := parseDecimal(ver, true)
	return ID{Epoch: e, Version: uint64(v)}, ok
}

// parseDecimal parses a canonical decimal (no sign, no leading zero);
// positive demands a value above 0.
func parseDecimal(s string, positive bool) (int64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || positive && n == 0 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// Every function below takes the vfs.FS that holds dir; nil means the
// local disk (vfs.Default).

// List returns the IDs of the manifests in dir, ascending; none (and no
// error) when dir does not exist.
func List(fsys vfs.FS, dir string) ([]ID, error) {
	f, err := ReadFolder(fsys, dir)
	return f.IDs, err
}

// Epochs lists the epochs of the manifests in dir, ascending, each once;
// none (and no error) when dir does not exist.
func Epochs(fsys vfs.FS, dir string) ([]int64, error) {
	f, err := ReadFolder(fsys, dir)
	return f.Epochs(), err
}

// Load reads the newest manifest in dir. A folder without one gives the
// zero State, false and no error; a damaged newest manifest an error
// wrapping ErrCorrupt that names the file (an older one is never used in
// its place: a version is only ever renamed into place whole, so a damaged
// one is damage, not a torn save, and replaying from an older version
// could miss what a compaction since moved). Leftover temporary files (a
// save cut short by a crash) are ignored.
func Load(fsys vfs.FS, dir string) (State, bool, error) {
	s, _, found, err := LoadLatest(fsys, dir)
	return s, found, err
}

// LoadNewest is Load that also returns the epoch of the manifest read.
func LoadNewest(fsys vfs.FS, dir string) (State, int64, bool, error) {
	s, id, found, err := LoadLatest(fsys, dir)
	return s, id.Epoch, found, err
}

// LoadLatest is Load that also returns the ID of the manifest read.
func LoadLatest(fsys vfs.FS, dir string) (State, ID, bool, error) {
	f, err := ReadFolder(fsys, dir)
	if err != nil {
		return State{}, ID{}, false, err
	}
	return f.Load(fsys)
}

// Newest returns the ID of the newest manifest in dir, false if there is
// none.
//
// An object store's listing may lag behind its newest objects while a
// read of a new name already finds it (a LIST is not read-after-write,
// a HEAD or GET of a new key is), and a version missing from the listing
// must not make an older one win: that one may name files a compaction
// deleted since, or a replay point before log segments a flush deleted.
// So Newest asks for the versions after the newest listed, one by one by
// name (vfs.FS.Stat; Folder.Load reads them, on an object store with the
// newest listed one at once), until one is absent; the owner that wrote them
// counted them up one by one. Where that finds nothing newer, the newest
// listed version is the newest, or is gone (the owner deletes all but its
// two newest versions, and a newer epoch's owner deletes the older
// epoch's): then Load fails, and a later open, on a listing that caught
// up, succeeds. Versions of a newer epoch cannot be asked for by name
// (their numbers are not known): they rely on the older epoch's versions
// being unreadable once that owner's seal deleted them.
func Newest(fsys vfs.FS, dir string) (ID, bool, error) {
	fsys = vfs.Or(fsys)
	ids, err := List(fsys, dir)
	if err != nil || len(ids) == 0 {
		return ID{}, false, err
	}
	id, err := probeAfter(fsys, dir, ids[len(ids)-1])
	return id, err == nil, err
}

// probeAfter returns the newest version of id's epoch in dir at or after
// id, asking for each next version by name.
func probeAfter(fsys vfs.FS, dir string, id ID) (ID, error) {
	for {
		next := ID{Epoch: id.Epoch, Version: id.Version + 1}
		_, err := fsys.Stat(filepath.Join(dir, next.Name()))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return id, nil
		case err != nil:
			return ID{}, fmt.Errorf("manifest: looking for a version the listing may not show yet: %w", err)
		}
		id = next
	}
}

// Save saves s as the next version of epoch 0; see SaveEpoch.
func Save(fsys vfs.FS, dir string, s State) error { return SaveEpoch(fsys, dir, 0, s) }

// SaveEpoch saves s as the next version of epoch in dir: one above the
// newest version of that epoch there (it lists dir; an engine that counts
// its versions calls SaveVersion).
func SaveEpoch(fsys vfs.FS, dir string, epoch int64, s State) error {
	ids, err := List(fsys, dir)
	if err != nil {
		return err
	}
	last := ID{Epoch: epoch}
	for _, id := range ids {
		if id.Epoch == epoch && id.Version >= last.Version {
			last = id
		}
	}
	// A version the listing does not show yet must not be written again.
	if last, err = probeAfter(vfs.Or(fsys), dir, last); err != nil {
		return err
	}
	return SaveVersion(fsys, dir, ID{Epoch: epoch, Version: last.Version + 1}, s)
}

// SaveVersion writes s as the manifest id in dir: it writes a temporary
// file, fsyncs it, renames it to id's name (a new file, never one that
// exists: versions only grow) and fsyncs dir. After a crash at any instant
// Load yields the old or the new state. dir must exist. On an FS with
// whole files (an object store) it is one PUT under id's name instead
// (saveWhole says why that keeps every promise below).
//
// A rename that fails is an unknown outcome unless its error wraps
// vfs.ErrNotApplied (on an object store a rename is a copy and deletes, and
// the copy may have landed, or may still land, whatever the answer said).
// SaveVersion then reads the new version back: if it holds the bytes
// written, the save happened and goes on as if the rename had said so; if
// it is absent or cannot be read, the error wraps ErrMaybeSaved, and the
// temporary file stays for a rename that may still land (RemoveBefore
// deletes it later).
//
// An error wrapping ErrMaybeSaved means Load may yield either state from
// now on, so the files s names must be kept. Any other error leaves the
// newest manifest as it was.
func SaveVersion(fsys vfs.FS, dir string, id ID, s State) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("manifest: refusing to save: %w", err)
	}
	if id.Version == 0 {
		return fmt.Errorf("manifest: refusing to save version 0 of epoch %d: versions start at 1", id.Epoch)
	}
	b, err := encode(s)
	if err != nil {
		return err
	}
	fsys = vfs.Or(fsys)
	if w, ok := fsys.(vfs.WholeFiles); ok {
		return saveWhole(fsys, w, dir, id, s, b)
	}
	name := id.Name()
	tmp := filepath.Join(dir, name+".tmp")
	if err := writeSynced(fsys, tmp, b); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("manifest: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := fsys.Rename(tmp, path); err != nil {
		if errors.Is(err, vfs.ErrNotApplied) {
			fsys.Remove(tmp)
			return fmt.Errorf("manifest: %w", err)
		}
		if rerr := holds(fsys, path, b); rerr != nil {
			return fmt.Errorf("%w: %w (reading %s back: %v)", ErrMaybeSaved, err, name, rerr)
		}
		// Renamed after all; on an object store the copy's source may
		// be left behind.
		if err := fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %w", ErrMaybeSaved, err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("%w: fsync %s: %w", ErrMaybeSaved, dir, err)
	}
	return nil
}

// saveWhole is SaveVersion on an object store (vfs.WholeFiles): one PUT
// of the version under its own name, which readers see whole or not at
// all, so nothing is renamed. Why this keeps every promise of the
// temporary file and rename (docs/CONTRACTS.md §3 "Manifest"):
//
//   - atomicity: a reader sees the new version whole or not at all, as
//     after a rename; a crash before the PUT returned leaves the old state
//     or the new, the same two outcomes;
//   - no overwrite: the name is new (versions only grow, and a version
//     whose save failed is never used again), so a late PUT can only
//     publish its own bytes under its own name;
//   - an unknown outcome (any error not marked vfs.ErrNotApplied): the
//     version is read back; whole, the save happened; otherwise the error
//     wraps ErrMaybeSaved, and the save is recorded for a reopen at the
//     same epoch, which must skip its version and file numbers: in this
//     process (Folder.Pending), and in the store as the version's
//     temporary file, written now with the same bytes (best effort: the
//     store just failed). A reopen at the same epoch finds either, as it
//     found the temporary file a rename left behind.
func saveWhole(fsys vfs.FS, w vfs.WholeFiles, dir string, id ID, s State, b []byte) error {
	path := filepath.Join(dir, id.Name())
	err := w.WriteWhole(path, b)
	if err == nil {
		return nil
	}
	if errors.Is(err, vfs.ErrNotApplied) {
		return fmt.Errorf("manifest: %w", err)
	}
	rerr := holds(fsys, path, b)
	if rerr == nil {
		return nil // the PUT landed; its answer was lost
	}
	notePending(fsys, dir, id, s.NextFileNum)
	if terr := w.WriteWhole(path+".tmp", b); terr != nil {
		rerr = fmt.Errorf("%v; recording the save: %v", rerr, terr)
	}
	return fmt.Errorf("%w: %w (reading %s back: %v)", ErrMaybeSaved, err, id.Name(), rerr)
}

// Pending describes the saves of epoch in dir after version after whose
// outcome is unknown: their temporary files are still there (SaveVersion
// keeps them). An owner that opens the tablet again at the same epoch must
// skip both: Version is the highest such version (0 if none), and
// NextFileNum the highest file number their states reserve, whose files
// were kept for them.
type Pending struct {
	Version     uint64
	NextFileNum uint64
}

// PendingSaves lists the temporary files of epoch's versions after after
// in dir (see Pending). A temporary file that does not decode (a save cut
// short before its rename) still counts for its version.
func PendingSaves(fsys vfs.FS, dir string, epoch int64, after uint64) (Pending, error) {
	f, err := ReadFolder(fsys, dir)
	if err != nil {
		return Pending{}, err
	}
	return f.Pending(fsys, epoch, after), nil
}

// RemoveOlder deletes the manifests of epochs below epoch (and their
// leftover temporary files), once a manifest of epoch is durable.
func RemoveOlder(fsys vfs.FS, dir string, epoch int64) error {
	return RemoveBefore(fsys, dir, ID{Epoch: epoch})
}

// RemoveBefore deletes the manifests older than keep (and their leftover
// temporary files), once keep or a newer one is durable. An engine keeps
// the version before its newest, so that a reader that listed the folder
// just before the newest appeared can still read what it chose.
//
// The temporary files of older versions go too, whether or not their
// version ever landed (a save of unknown outcome leaves its temporary file
// behind: see SaveVersion).
func RemoveBefore(fsys vfs.FS, dir string, keep ID) error {
	f, err := ReadFolder(fsys, dir)
	if err != nil {
		return err
	}
	return RemoveFiles(fsys, f.Before(keep))
}

// Remove deletes every version of the manifest of epoch in dir, if any.
func Remove(fsys vfs.FS, dir string, epoch int64) error {
	fsys = vfs.Or(fsys)
	ids, err := List(fsys, dir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id.Epoch != epoch {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, id.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("manifest: %w", err)
		}
	}
	return nil
}

// writeSynced writes b to a new file at path and fsyncs it. A file left
// at path by a save cut short is removed first: files are created
// exclusively.
func writeSynced(fsys vfs.FS, path string, b []byte) error {
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return vfs.WriteSynced(fsys, path, b)
}
