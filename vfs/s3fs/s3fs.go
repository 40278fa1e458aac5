package s3fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"

	"github.com/tabuladb/tabula/vfs"
)

// FS is a vfs.FS on one bucket and prefix.
type FS struct {
	c       *minio.Client
	cfg     Config
	refused string // what a refusal of the credentials means (credentials.go)
	counts  *counters
	// dirs holds the keys of the directory markers this FS wrote (or
	// found writing them unnecessary), so that MkdirAll, which the engine
	// calls before every SSTable it writes, does not PUT the same markers
	// again: four PUTs per flush for a tablet's family folder and its
	// parents. Remove and RemoveAll forget what they remove.
	dirs sync.Map
}

var (
	_ vfs.FS         = (*FS)(nil)
	_ vfs.SizedFiles = (*FS)(nil)
)

// Open connects to the store and checks that the credentials can be had,
// that the bucket exists and that the credentials may write, within ctx:
// a wrong endpoint, bucket, key or credentials file fails here, with an
// error that says which, not later in the middle of a write.
func Open(ctx context.Context, cfg Config) (*FS, error) {
	cfg = cfg.withDefaults()
	if cfg.Root == "" {
		return nil, errors.New("s3fs: Config.Root is required")
	}
	creds, refused := cfg.credentials()
	counts := &counters{}
	tr, err := minio.DefaultTransport(cfg.Secure)
	if err != nil {
		return nil, fmt.Errorf("s3fs: endpoint %s: %w", cfg.Endpoint, err)
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: creds, Secure: cfg.Secure, Region: cfg.Region,
		Transport: countingTransport{next: tr, c: counts}})
	if err != nil {
		return nil, fmt.Errorf("s3fs: endpoint %s: %w", cfg.Endpoint, err)
	}
	f := &FS{c: c, cfg: cfg, refused: refused, counts: counts}
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cc := c.CredContext()
	cc.Context = cctx
	if _, err := creds.GetWithContext(cc); err != nil {
		return nil, fmt.Errorf("s3fs: %w", err)
	}
	ok, err := c.BucketExists(cctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3fs: checking bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, f.explain(err))
	}
	if !ok {
		return nil, fmt.Errorf("s3fs: bucket %q does not exist at %s; create it first", cfg.Bucket, cfg.Endpoint)
	}
	// A read is not enough to prove the credentials may write.
	probe := f.join(".tabula-write-probe")
	if _, err := c.PutObject(cctx, cfg.Bucket, probe, bytes.NewReader(nil), 0, minio.PutObjectOptions{}); err != nil {
		return nil, fmt.Errorf("s3fs: writing to bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, f.explain(err))
	}
	_ = c.RemoveObject(cctx, cfg.Bucket, probe, minio.RemoveObjectOptions{})
	return f, nil
}

// explain names the usual causes of a store's refusal, with where the
// credentials came from and what to do, since after a rotation went wrong
// this is the error an operator sees on every write. A failure to get
// credentials at all (credError) already names its source. A store that
// throttles (after the client's own retries) is marked vfs.ErrSlowDown, so
// that whoever tries again backs off further.
func (f *FS) explain(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken":
		return fmt.Errorf("%s: %w", f.refused, err)
	case "SlowDown", "SlowDownWrite", "SlowDownRead", "Throttling", "ThrottlingException", "RequestLimitExceeded", "RequestThrottled":
		return fmt.Errorf("%w: %w", vfs.ErrSlowDown, err)
	}
	return err
}

func (f *FS) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.cfg.Timeout)
}

func (f *FS) join(rel string) string {
	if f.cfg.Prefix == "" {
		return rel
	}
	return f.cfg.Prefix + "/" + rel
}

// key maps a local name under Root to its object key (without a part
// suffix); the root itself maps to "".
func (f *FS) key(name string) (string, error) {
	rel, err := filepath.Rel(f.cfg.Root, filepath.Clean(name))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("s3fs: %s is outside the storage root %s", name, f.cfg.Root)
	}
	if rel == "." {
		return f.cfg.Prefix, nil
	}
	rel = filepath.ToSlash(rel)
	if strings.Contains(rel, partSep) {
		return "", fmt.Errorf("s3fs: %s: names may not contain %q", name, partSep)
	}
	return f.join(rel), nil
}

// dirPrefix is the prefix of everything inside the directory key.
func dirPrefix(key string) string {
	if key == "" {
		return ""
	}
	return key + "/"
}

func notExist(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} }

// lookup maps name to its key and lists its parts and runs.
func (f *FS) lookup(name string) (key string, ps, rs []part, err error) {
	if key, err = f.key(name); err != nil {
		return "", nil, nil, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	ps, rs, err = f.parts(ctx, key)
	return key, ps, rs, err
}

// Create starts a new file; it fails if the file exists. Runs left of a
// removed file of the same name (runs.go) are deleted first.
func (f *FS) Create(name string) (vfs.Writable, error) {
	key, ps, rs, err := f.lookup(name)
	if err != nil {
		return nil, err
	}
	if len(ps) > 0 {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	if len(rs) > 0 {
		ctx, cancel := f.ctx()
		defer cancel()
		if err := f.removeKeys(ctx, name, rs); err != nil {
			return nil, err
		}
	}
	return newWriter(f, name, key)
}

// Open opens a file for reading; its parts and runs are listed now
// (readParts), and it reads each stretch of parts a run covers from the
// run (runs.go).
func (f *FS) Open(name string) (vfs.Readable, error) {
	key, err := f.key(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	plan, size, _, err := f.readParts(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(plan) == 0 {
		return nil, notExist("open", name)
	}
	return &reader{f: f, name: name, parts: plan, size: size}, nil
}

// OpenSized opens a file written in one part of size bytes (an SSTable:
// synced once and closed) without listing its parts: its reads are ranged
// GETs of part 0 (vfs.SizedFiles), and each checks the answer's length of
// the whole object: a file of several parts, or of another size, fails
// its first read, and its caller opens it again with Open.
func (f *FS) OpenSized(name string, size int64) (vfs.Readable, error) {
	key, err := f.key(name)
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("s3fs: open %s with a size of %d bytes", name, size)
	}
	return &reader{f: f, name: name, parts: []part{{key: partKey(key, 0), off: 0, size: size}}, size: size, sized: true}, nil
}

// Truncate rewrites the file as one part of its first size bytes.
func (f *FS) Truncate(name string, size int64) error {
	key, old, runs, err := f.lookup(name)
	if err != nil {
		return err
	}
	if len(old) == 0 {
		return notExist("truncate", name)
	}
	r := &reader{f: f, name: name, parts: readPlan(old, runs), size: old[len(old)-1].off + old[len(old)-1].size}
	if size > r.Size() {
		return fmt.Errorf("s3fs: truncate %s to %d: the file has %d bytes", name, size, r.Size())
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && !(err == io.EOF && size == 0) {
		return err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	// The runs go first: they hold bytes past the cut.
	if err := f.removeKeys(ctx, name, runs); err != nil {
		return err
	}
	// Write the new first part, then drop the others: a crash in between
	// leaves the old tail, which replay reads again and cuts again.
	if _, err := f.c.PutObject(ctx, f.cfg.Bucket, partKey(key, 0), bytes.NewReader(b), size, minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("s3fs: truncate %s: %w", name, f.explain(err))
	}
	// Newest part first, so that a crash half way leaves no gap.
	for _, p := range slices.Backward(old[1:]) {
		if err := f.c.RemoveObject(ctx, f.cfg.Bucket, p.key, minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("s3fs: truncate %s: %w", name, f.explain(err))
		}
	}
	return nil
}

// Remove removes a file, or a directory that holds nothing.
func (f *FS) Remove(name string) error {
	key, err := f.key(name)
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	ps, rs, err := f.listParts(ctx, key)
	if err != nil {
		return err
	}
	if len(ps) > 0 || len(rs) > 0 {
		// The runs first, then the newest part first: a removal cut
		// short leaves parts 0..k, a shorter file a reader can still
		// open, never one with a gap (ErrMissingPart), nor a run whose
		// parts are gone. A file that has a gap already is removed too.
		slices.Reverse(ps)
		return f.removeKeys(ctx, name, append(rs, ps...))
	}
	entries, marker, err := f.list(ctx, key)
	if err != nil {
		return err
	}
	if !marker && len(entries) == 0 {
		return notExist("remove", name)
	}
	if len(entries) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	f.forgetDirs(key)
	return f.removeKeys(ctx, name, []part{{key: dirPrefix(key)}})
}

func (f *FS) removeKeys(ctx context.Context, name string, ps []part) error {
	if len(ps) == 0 {
		return nil
	}
	keys := make([]string, len(ps))
	for i, p := range ps {
		keys[i] = p.key
	}
	return f.deleteKeys(ctx, name, keys)
}

// deleteKeys deletes keys in the order given, with multi-object deletes
// of up to 1000 keys a request (a busy commit log segment is thousands of
// objects: one per group commit).
func (f *FS) deleteKeys(ctx context.Context, name string, keys []string) error {
	if len(keys) == 1 {
		if err := f.c.RemoveObject(ctx, f.cfg.Bucket, keys[0], minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("s3fs: remove %s: %w", name, f.explain(err))
		}
		return nil
	}
	ch := make(chan minio.ObjectInfo)
	go func() {
		defer close(ch)
		for _, k := range keys {
			select {
			case ch <- minio.ObjectInfo{Key: k}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range f.c.RemoveObjects(ctx, f.cfg.Bucket, ch, minio.RemoveObjectsOptions{}) {
		if len(errs) < 3 {
			errs = append(errs, fmt.Errorf("%s: %w", e.ObjectName, f.explain(e.Err)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("s3fs: remove %s: %w", name, errors.Join(errs...))
	}
	return ctx.Err()
}

// RemoveAll removes a file or a directory tree; a missing name is fine.
func (f *FS) RemoveAll(name string) error {
	key, err := f.key(name)
	if err != nil {
		return err
	}
	if key == f.cfg.Prefix {
		return fmt.Errorf("s3fs: refusing to remove the whole storage root %s", name)
	}
	f.forgetDirs(key)
	ctx, cancel := f.ctx()
	defer cancel()
	var keys []string
	for _, prefix := range []string{key + partSep, dirPrefix(key)} {
		for o := range f.c.ListObjects(ctx, f.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if o.Err != nil {
				return fmt.Errorf("s3fs: remove %s: %w", name, f.explain(o.Err))
			}
			keys = append(keys, o.Key)
		}
	}
	// Deepest first: a directory's marker goes after everything inside it
	// (stores with real directories, SeaweedFS's filer among them, keep a
	// directory whose marker was deleted while it still held objects).
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	return f.deleteKeys(ctx, name, keys)
}

// Rename publishes a one-part file under newname, replacing it: a server
// side copy, which readers see whole or not at all, then the source goes.
func (f *FS) Rename(oldname, newname string) error {
	from, err := f.key(oldname)
	if err != nil {
		return err
	}
	to, err := f.key(newname)
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	src, _, err := f.parts(ctx, from)
	if err != nil {
		return err
	}
	if len(src) != 1 {
		if len(src) == 0 {
			return notExist("rename", oldname)
		}
		return fmt.Errorf("s3fs: rename %s: it has %d parts; only a file synced once can be renamed", oldname, len(src))
	}
	dst, dstRuns, err := f.parts(ctx, to)
	if err != nil {
		return err
	}
	// The target's runs hold its old bytes: they go before it changes.
	if err := f.removeKeys(ctx, newname, dstRuns); err != nil {
		return err
	}
	if _, err := f.c.CopyObject(ctx, minio.CopyDestOptions{Bucket: f.cfg.Bucket, Object: partKey(to, 0)},
		minio.CopySrcOptions{Bucket: f.cfg.Bucket, Object: src[0].key}); err != nil {
		return fmt.Errorf("s3fs: rename %s to %s: %w", oldname, newname, f.explain(err))
	}
	var extra []part
	for _, p := range dst {
		if p.key != partKey(to, 0) {
			extra = append(extra, p)
		}
	}
	if err := f.removeKeys(ctx, newname, extra); err != nil {
		return err
	}
	return f.removeKeys(ctx, oldname, src)
}

// MkdirAll writes the directory markers of dir and its parents below Root.
func (f *FS) MkdirAll(dir string) error {
	key, err := f.key(dir)
	if err != nil {
		return err
	}
	base := f.cfg.Prefix
	rest := strings.TrimPrefix(strings.TrimPrefix(key, base), "/")
	if rest == "" {
		return nil
	}
	if _, ok := f.dirs.Load(key); ok {
		return nil // written before, with its parents
	}
	ctx, cancel := f.ctx()
	defer cancel()
	cur := base
	for _, el := range strings.Split(rest, "/") {
		cur = path.Join(cur, el)
		if _, ok := f.dirs.Load(cur); ok {
			continue
		}
		if _, err := f.c.PutObject(ctx, f.cfg.Bucket, dirPrefix(cur), bytes.NewReader(nil), 0, minio.PutObjectOptions{}); err != nil {
			return fmt.Errorf("s3fs: mkdir %s: %w", dir, f.explain(err))
		}
		f.dirs.Store(cur, struct{}{})
	}
	return nil
}

// forgetDirs forgets the markers of key and of everything below it.
func (f *FS) forgetDirs(key string) {
	f.dirs.Range(func(k, _ any) bool {
		if d := k.(string); d == key || strings.HasPrefix(d, dirPrefix(key)) {
			f.dirs.Delete(d)
		}
		return true
	})
}

// list returns the entries directly inside the directory key, and whether
// its marker exists.
func (f *FS) list(ctx context.Context, key string) ([]vfs.Entry, bool, error) {
	prefix := dirPrefix(key)
	seen := map[string]bool{}
	var out []vfs.Entry
	marker := false
	for o := range f.c.ListObjects(ctx, f.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if o.Err != nil {
			return nil, false, fmt.Errorf("s3fs: listing %s: %w", key, f.explain(o.Err))
		}
		rest := strings.TrimPrefix(o.Key, prefix)
		switch {
		case rest == "":
			marker = true
		case strings.HasSuffix(rest, "/"):
			if n := strings.TrimSuffix(rest, "/"); !seen[n] {
				seen[n] = true
				out = append(out, vfs.Entry{Name: n, IsDir: true})
			}
		default:
			n := rest
			if i := strings.LastIndex(rest, partSep); i >= 0 {
				n = rest[:i]
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, vfs.Entry{Name: n})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, marker, nil
}

// List lists a directory; one that has neither a marker nor entries does
// not exist.
func (f *FS) List(dir string) ([]vfs.Entry, error) {
	key, err := f.key(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	out, marker, err := f.list(ctx, key)
	if err != nil {
		return nil, err
	}
	if !marker && len(out) == 0 && key != f.cfg.Prefix {
		return nil, notExist("list", dir)
	}
	return out, nil
}

// Stat describes a file (its size is the sum of its parts, its time the
// last part's) or a directory (with the zero time: its contents carry the
// ages that matter).
func (f *FS) Stat(name string) (vfs.Info, error) {
	key, err := f.key(name)
	if err != nil {
		return vfs.Info{}, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	plan, size, modified, err := f.readParts(ctx, key)
	if err != nil {
		return vfs.Info{}, err
	}
	base := path.Base(filepath.ToSlash(name))
	if len(plan) > 0 {
		return vfs.Info{Name: base, Size: size, ModTime: modified, Mode: 0o644}, nil
	}
	entries, marker, err := f.list(ctx, key)
	if err != nil {
		return vfs.Info{}, err
	}
	if !marker && len(entries) == 0 && key != f.cfg.Prefix {
		return vfs.Info{}, notExist("stat", name)
	}
	return vfs.Info{Name: base, Mode: fs.ModeDir | 0o755}, nil
}

// SyncDir does nothing: an object is durable when its PUT returns.
func (f *FS) SyncDir(string) error { return nil }

var _ vfs.WholeFiles = (*FS)(nil)

// WriteWhole publishes b as name's only part with one PUT, without the
// LIST that Create makes to refuse an existing name: the caller names
// every file once (a manifest version).
func (f *FS) WriteWhole(name string, b []byte) error {
	key, err := f.key(name)
	if err != nil {
		return vfs.NotApplied(err)
	}
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.c.PutObject(ctx, f.cfg.Bucket, partKey(key, 0), bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("s3fs: writing %s: %w", name, f.explain(err))
	}
	return nil
}

// ReadWhole reads name's first part with one GET, without listing its
// parts (see vfs.WholeFiles: only for files written in one part).
func (f *FS) ReadWhole(name string) ([]byte, error) {
	key, err := f.key(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	obj, err := f.c.GetObject(ctx, f.cfg.Bucket, partKey(key, 0), minio.GetObjectOptions{})
	if err == nil {
		var b []byte
		b, err = io.ReadAll(obj)
		obj.Close()
		if err == nil {
			return b, nil
		}
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, notExist("open", name)
	}
	return nil, fmt.Errorf("s3fs: reading %s: %w", name, f.explain(err))
}

// RemoveWhole deletes the first part of each name: one DELETE for one
// name, one multi-object delete per 1,000 names for more.
func (f *FS) RemoveWhole(names []string) error {
	if len(names) == 0 {
		return nil
	}
	keys := make([]string, len(names))
	for i, n := range names {
		key, err := f.key(n)
		if err != nil {
			return err
		}
		keys[i] = partKey(key, 0)
	}
	ctx, cancel := f.ctx()
	defer cancel()
	return f.deleteKeys(ctx, names[0], keys)
}
