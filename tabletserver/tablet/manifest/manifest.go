package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/vfs"
)

// ErrCorrupt marks a MANIFEST that cannot be trusted: bad magic line,
// unknown format version, checksum mismatch or an undecodable state. Errors
// wrapping it name the file. It wraps corruption.ErrCorrupt.
var ErrCorrupt = corruption.New("manifest: corrupt")

// ErrMaybeSaved marks a SaveEpoch that renamed the new manifest into place
// but could not make the rename durable: after a crash, or on storage that
// reports the failure late, either the old or the new state may be read.
var ErrMaybeSaved = errors.New("manifest: saved, but not known to be durable")

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
}

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
//	tabula-manifest 1\n          magic word and format version
//	{...state as JSON...}\n      one line; []byte fields are base64
//	crc32c 1a2b3c4d\n            CRC32C (Castagnoli) of every byte above, 8 hex digits
const (
	magic         = "tabula-manifest"
	formatVersion = 1
	crcPrefix     = "crc32c "
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the MANIFEST bytes of s.
func encode(s State) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("manifest: encode: %w", err)
	}
	b := fmt.Appendf(nil, "%s %d\n", magic, formatVersion)
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
	if string(ver) != strconv.Itoa(formatVersion) {
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
		s.Files[i].Lower, s.Files[i].Upper = nilIfEmpty(s.Files[i].Lower), nilIfEmpty(s.Files[i].Upper)
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
	}
	return nil
}

// Manifest files are named by the epoch of the owner that wrote them
// (docs/OWNERSHIP.md): MANIFEST-<epoch> in decimal, and plain MANIFEST for
// epoch 0 (engines opened without an owner epoch, and tablets written
// before epochs were recorded). The newest epoch wins. An owner that lost
// its tablet (a zombie that wakes after its lease expired) can still
// rewrite its own MANIFEST-<old epoch>, but nobody reads it again once the
// next owner has written MANIFEST-<new epoch>.

// Name returns the manifest file name of epoch.
func Name(epoch int64) string {
	if epoch <= 0 {
		return FileName
	}
	return FileName + "-" + strconv.FormatInt(epoch, 10)
}

// parseName returns the epoch of a manifest file name.
func parseName(name string) (int64, bool) {
	if name == FileName {
		return 0, true
	}
	rest, ok := strings.CutPrefix(name, FileName+"-")
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	e, err := strconv.ParseInt(rest, 10, 64)
	return e, err == nil && e > 0
}

// Every function below takes the vfs.FS that holds dir; nil means the
// local disk (vfs.Default).

// Epochs lists the epochs of the manifests in dir, ascending; none (and
// no error) when dir does not exist.
func Epochs(fsys vfs.FS, dir string) ([]int64, error) {
	entries, err := vfs.Or(fsys).List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var out []int64
	for _, e := range entries {
		if ep, ok := parseName(e.Name); ok && !e.IsDir {
			out = append(out, ep)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Load reads the newest manifest in dir. A folder without one gives the
// zero State, false and no error; a damaged newest manifest an error
// wrapping ErrCorrupt that names the file (an older one is never used in
// its place). Leftover temporary files (a Save cut short by a crash) are
// ignored.
func Load(fsys vfs.FS, dir string) (State, bool, error) {
	s, _, found, err := LoadNewest(fsys, dir)
	return s, found, err
}

// LoadNewest is Load that also returns the epoch of the manifest read.
func LoadNewest(fsys vfs.FS, dir string) (State, int64, bool, error) {
	fsys = vfs.Or(fsys)
	epochs, err := Epochs(fsys, dir)
	if err != nil || len(epochs) == 0 {
		return State{}, 0, false, err
	}
	epoch := epochs[len(epochs)-1]
	path := filepath.Join(dir, Name(epoch))
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return State{}, 0, false, fmt.Errorf("manifest: %w", err)
	}
	s, err := decode(path, b)
	if err != nil {
		return State{}, 0, false, err
	}
	return s, epoch, true, nil
}

// Save replaces <dir>/MANIFEST (epoch 0) with s; see SaveEpoch.
func Save(fsys vfs.FS, dir string, s State) error { return SaveEpoch(fsys, dir, 0, s) }

// SaveEpoch replaces the manifest of epoch in dir with s: it writes a
// temporary file of that epoch, fsyncs it, renames it over the manifest
// and fsyncs dir. After a crash at any instant Load yields the old or the
// new state. dir must exist.
//
// An error wrapping ErrMaybeSaved means the rename was done but not made
// durable: Load may yield either state, so the files s names must be kept.
// Any other error leaves the old manifest in place.
func SaveEpoch(fsys vfs.FS, dir string, epoch int64, s State) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("manifest: refusing to save: %w", err)
	}
	b, err := encode(s)
	if err != nil {
		return err
	}
	fsys = vfs.Or(fsys)
	name := Name(epoch)
	tmp := filepath.Join(dir, name+".tmp")
	if err := writeSynced(fsys, tmp, b); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("manifest: %w", err)
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("manifest: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("%w: fsync %s: %w", ErrMaybeSaved, dir, err)
	}
	return nil
}

// RemoveOlder deletes the manifests of epochs below epoch (and their
// leftover temporary files), once the manifest of epoch is durable.
func RemoveOlder(fsys vfs.FS, dir string, epoch int64) error {
	fsys = vfs.Or(fsys)
	epochs, err := Epochs(fsys, dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range epochs {
		if e >= epoch {
			continue
		}
		for _, n := range []string{Name(e), Name(e) + ".tmp"} {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("manifest: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Remove deletes the manifest of epoch in dir, if any.
func Remove(fsys vfs.FS, dir string, epoch int64) error {
	err := vfs.Or(fsys).Remove(filepath.Join(dir, Name(epoch)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("manifest: %w", err)
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
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
