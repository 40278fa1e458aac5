package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/tabuladb/tabula/manifest"
)

// The backup manifest (docs/CONTRACTS.md §4b), text so operators can read
// it, sealed as a tablet manifest is:
//
//	tabula-backup 1\n            magic word and format version
//	{...Manifest as JSON...}\n   one line; []byte fields are base64
//	crc32c 1a2b3c4d\n            CRC32C (Castagnoli) of every byte above
//
// A reader refuses a version it does not know, so a field whose meaning
// changes gets a new version; a field added with "omitempty" whose
// absence means what older backups meant does not.
const (
	manifestMagic   = "tabula-backup"
	manifestVersion = 1
	crcPrefix       = "crc32c "
)

// ErrCorrupt marks a backup manifest that does not decode.
var ErrCorrupt = errors.New("backup: corrupt manifest")

// Manifest describes one complete backup.
type Manifest struct {
	Name  string `json:"name"`
	Table string `json:"table"`
	// Snapshot and SnapshotID name the snapshot copied (deleted afterwards
	// when OwnSnapshot: the backup took it itself).
	Snapshot    string `json:"snapshot"`
	SnapshotID  string `json:"snapshot_id"`
	OwnSnapshot bool   `json:"own_snapshot,omitempty"`
	// CreatedMicros is when the snapshot was taken; ExpiresMicros when the
	// backup may be deleted by `backup delete --expired` (0: never).
	CreatedMicros int64 `json:"created_unix_micros"`
	ExpiresMicros int64 `json:"expires_unix_micros,omitempty"`
	// Schema is the table's schema at the snapshot (tabulapb.TableSchema
	// in protojson).
	Schema json.RawMessage `json:"schema"`
	// Tablets are the snapshot's tablets in key order.
	Tablets []Tablet `json:"tablets"`
	// Files are the distinct files the tablets name, with their size and
	// the CRC32C of their bytes computed when they were copied.
	Files []File `json:"files"`
}

// Tablet is one tablet of a backup: its id, and its state at the snapshot
// (a tablet manifest's State: range, files, sequence numbers) with paths
// relative to the tablet's folder files/<table>/<id>/, as the tablet's own
// manifest has them.
type Tablet struct {
	ID    string         `json:"id"`
	State manifest.State `json:"state"`
}

// File is one backed-up file: its path under files/, size and CRC32C.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// Bytes is the sum of the files' sizes.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Encode returns the manifest's bytes.
func (m *Manifest) Encode() ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("backup: encode manifest: %w", err)
	}
	b := fmt.Appendf(nil, "%s %d\n", manifestMagic, manifestVersion)
	b = append(b, body...)
	b = append(b, '\n')
	return fmt.Appendf(b, "%s%08x\n", crcPrefix, crc32.Checksum(b, castagnoli)), nil
}

// Decode parses a manifest's bytes and checks what a reader relies on:
// the checksum, the version, a valid name, and file paths inside files/.
func Decode(name string, b []byte) (*Manifest, error) {
	bad := func(format string, args ...any) (*Manifest, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return bad("missing trailer (torn write?)")
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if i < 0 {
		return bad("missing trailer")
	}
	content, trailer := b[:i+1], b[i+1:len(b)-1]
	hex, ok := bytes.CutPrefix(trailer, []byte(crcPrefix))
	if !ok || len(hex) != 8 {
		return bad("bad checksum trailer")
	}
	// Compared as written (lower-case hex), so that every byte counts.
	if got := fmt.Sprintf("%08x", crc32.Checksum(content, castagnoli)); got != string(hex) {
		return bad("checksum mismatch: file says %s, content has %s", hex, got)
	}
	header, body, ok := bytes.Cut(content, []byte("\n"))
	if !ok {
		return bad("missing magic line")
	}
	word, ver, ok := bytes.Cut(header, []byte(" "))
	if !ok || string(word) != manifestMagic {
		return bad("bad magic line %q", header)
	}
	v, err := strconv.Atoi(string(ver))
	if err != nil || v != manifestVersion {
		return bad("unknown format version %q (this release reads %d)", ver, manifestVersion)
	}
	var m Manifest
	if err := json.Unmarshal(bytes.TrimSuffix(body, []byte("\n")), &m); err != nil {
		return bad("%v", err)
	}
	if err := validName(m.Name); err != nil {
		return bad("%v", err)
	}
	seen := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if err := validRel(f.Path); err != nil {
			return bad("%v", err)
		}
		if f.Size < 0 || seen[f.Path] {
			return bad("file %s listed twice or with a negative size", f.Path)
		}
		seen[f.Path] = true
	}
	for _, t := range m.Tablets {
		for _, f := range t.State.Files {
			rel, err := tabletFileRel(m.Table, t.ID, f.Path)
			if err != nil {
				return bad("%v", err)
			}
			if !seen[rel] {
				return bad("tablet %s names %s, which the backup's files do not list", t.ID, f.Path)
			}
		}
	}
	return &m, nil
}
