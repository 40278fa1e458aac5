package backup

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/backend"
)

// A backup location's layout (docs/CONTRACTS.md §4b):
//
//	<location>/files/<table>/<tablet>/<family>/<n>.sst   the SSTables, at
//	        their path under the storage root's tables/ folder, shared by
//	        every backup of the table that names them
//	<location>/backups/<name>/STARTED   written first: the table, the
//	        snapshot, the start time (a backup with only this is unfinished)
//	<location>/backups/<name>/BACKUP    the backup manifest, written last
const (
	FilesFolder   = "files"
	BackupsFolder = "backups"
	StartedFile   = "STARTED"
	ManifestFile  = "BACKUP"
	// partialSuffix names a file being copied on a local disk, renamed
	// into place once synced: a file at its own name is whole.
	partialSuffix = ".partial"
)

// Location is a backup location: a folder on a vfs.FS.
type Location struct {
	FS   vfs.FS
	Root string
	Spec string // as given, for messages
}

// Open opens the backup location spec: a local folder (made if missing) or
// s3://BUCKET[/PREFIX][?endpoint=...], with the credential sources of
// --storage (vfs/backend). spoolDir is a local folder of this process for
// the temporary files of uploads.
func Open(ctx context.Context, spec, spoolDir string) (*Location, error) {
	if spec == "" {
		return nil, errors.New("backup: no location given")
	}
	fsys, root, err := backend.Open(ctx, spec, spoolDir)
	if err != nil {
		return nil, err
	}
	if !backend.IsURL(spec) {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	}
	return &Location{FS: fsys, Root: root, Spec: spec}, nil
}

func (l *Location) String() string { return l.Spec }

// file returns the path of the backed-up file rel (relative to files/).
func (l *Location) file(rel string) string {
	return filepath.Join(l.Root, FilesFolder, filepath.FromSlash(rel))
}

func (l *Location) backupDir(name string) string {
	return filepath.Join(l.Root, BackupsFolder, name)
}

// validName checks a backup name: one plain path element.
func validName(name string) error {
	if name == "" || len(name) > 200 || name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
		return fmt.Errorf("backup: %q is not a backup name", name)
	}
	return nil
}

// validRel checks a path of files/ from a manifest: relative, clean, and
// inside files/ (a manifest read from a location is not trusted to name
// files elsewhere).
func validRel(rel string) error {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "\\") {
		return fmt.Errorf("backup: file path %q is not a clean path inside %s/", rel, FilesFolder)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// copyFile copies src on sfs to the location's file rel, returning the
// bytes copied and their CRC32C (computed while copying). On a local disk
// it writes rel.partial, syncs it and renames it into place; on an object
// store (vfs.WholeFiles) a file is published whole by its one sync, so
// it writes rel directly. Either way a file at its name is complete.
func (l *Location) copyFile(ctx context.Context, sfs vfs.FS, src, rel string, onBytes func(int64)) (int64, uint32, error) {
	in, err := sfs.Open(src)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	dst := l.file(rel)
	if err := l.FS.MkdirAll(filepath.Dir(dst)); err != nil {
		return 0, 0, err
	}
	_, whole := l.FS.(vfs.WholeFiles)
	tmp := dst
	if !whole {
		tmp = dst + partialSuffix
		if err := l.FS.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, 0, err
		}
	}
	out, err := l.FS.Create(tmp)
	if err != nil {
		return 0, 0, err
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(out, h, progressWriter(onBytes)), ctxReader{ctx, in})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && !whole {
		err = l.FS.Rename(tmp, dst)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("backup: copying %s to %s: %w", src, dst, err)
	}
	return n, h.Sum32(), nil
}

// checksum reads the location's file rel whole: its size and CRC32C.
func (l *Location) checksum(ctx context.Context, rel string, onBytes func(int64)) (int64, uint32, error) {
	in, err := l.FS.Open(l.file(rel))
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(h, progressWriter(onBytes)), ctxReader{ctx, io.NewSectionReader(in, 0, in.Size())})
	return n, h.Sum32(), err
}

type progressWriter func(int64)

func (p progressWriter) Write(b []byte) (int, error) {
	if p != nil {
		p(int64(len(b)))
	}
	return len(b), nil
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// readSmall reads a small file of the location (a manifest, a marker).
func (l *Location) readSmall(name string) ([]byte, error) {
	if w, ok := l.FS.(vfs.WholeFiles); ok {
		return w.ReadWhole(name)
	}
	return vfs.ReadFile(l.FS, name)
}

// writeSmall publishes a small file whole: one PUT on an object store, a
// synced temporary file renamed into place on a disk.
func (l *Location) writeSmall(name string, b []byte) error {
	if err := l.FS.MkdirAll(filepath.Dir(name)); err != nil {
		return err
	}
	if w, ok := l.FS.(vfs.WholeFiles); ok {
		return w.WriteWhole(name, b)
	}
	tmp := name + partialSuffix
	if err := l.FS.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := vfs.WriteSynced(l.FS, tmp, b); err != nil {
		return err
	}
	if err := l.FS.Rename(tmp, name); err != nil {
		return err
	}
	return l.FS.SyncDir(filepath.Dir(name))
}

// removeSmall removes a file; a missing one is not an error.
func (l *Location) removeSmall(name string) error {
	if w, ok := l.FS.(vfs.WholeFiles); ok {
		return w.RemoveWhole([]string{name})
	}
	if err := l.FS.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
