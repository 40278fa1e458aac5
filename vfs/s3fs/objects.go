package s3fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
)

// Objects reads and writes plain objects, one object per file named
// Prefix/<name>, for files other tools read as they are (exports that
// Spark, DuckDB or BigQuery open): unlike FS, no parts, no directory
// markers. It takes the same Config (ParseURL) and credentials as FS.
type Objects struct {
	c   *minio.Client
	cfg Config
	fs  *FS // for explain
}

// OpenObjects connects to the bucket of cfg and checks it exists.
func OpenObjects(ctx context.Context, cfg Config) (*Objects, error) {
	cfg = cfg.withDefaults()
	creds, refused := cfg.credentials()
	tr, err := minio.DefaultTransport(cfg.Secure)
	if err != nil {
		return nil, fmt.Errorf("s3fs: endpoint %s: %w", cfg.Endpoint, err)
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: creds, Secure: cfg.Secure, Region: cfg.Region, Transport: tr})
	if err != nil {
		return nil, fmt.Errorf("s3fs: endpoint %s: %w", cfg.Endpoint, err)
	}
	o := &Objects{c: c, cfg: cfg, fs: &FS{c: c, cfg: cfg, refused: refused, counts: &counters{}}}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3fs: checking bucket %q at %s: %w", cfg.Bucket, cfg.Endpoint, o.fs.explain(err))
	}
	if !ok {
		return nil, fmt.Errorf("s3fs: bucket %q does not exist at %s; create it first", cfg.Bucket, cfg.Endpoint)
	}
	return o, nil
}

func (o *Objects) key(name string) string {
	if o.cfg.Prefix == "" {
		return name
	}
	return o.cfg.Prefix + "/" + name
}

// Put uploads r as the object name (streamed in parts when size is -1);
// it fails, uploading nothing, when name exists.
func (o *Objects) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if _, err := o.c.StatObject(ctx, o.cfg.Bucket, o.key(name), minio.StatObjectOptions{}); err == nil {
		return fmt.Errorf("s3fs: object %s/%s exists", o.cfg.Bucket, o.key(name))
	} else if minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return fmt.Errorf("s3fs: %s: %w", o.key(name), o.fs.explain(err))
	}
	_, err := o.c.PutObject(ctx, o.cfg.Bucket, o.key(name), r, size, minio.PutObjectOptions{PartSize: 16 << 20})
	if err != nil {
		return fmt.Errorf("s3fs: writing %s: %w", o.key(name), o.fs.explain(err))
	}
	return nil
}

// Get opens the object name for reading; a missing one gives an error
// matching ErrNoObject.
func (o *Objects) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	obj, err := o.c.GetObject(ctx, o.cfg.Bucket, o.key(name), minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat()
	}
	if err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("%w: %s/%s", ErrNoObject, o.cfg.Bucket, o.key(name))
		}
		return nil, fmt.Errorf("s3fs: reading %s: %w", o.key(name), o.fs.explain(err))
	}
	return obj, nil
}

// ErrNoObject is Get's error for a missing object.
var ErrNoObject = errors.New("s3fs: no such object")

// List returns the names of the objects right under the prefix, sorted.
func (o *Objects) List(ctx context.Context) ([]string, error) {
	p := o.key("")
	var out []string
	for info := range o.c.ListObjects(ctx, o.cfg.Bucket, minio.ListObjectsOptions{Prefix: p}) {
		if info.Err != nil {
			return nil, fmt.Errorf("s3fs: listing %s: %w", p, o.fs.explain(info.Err))
		}
		if name := strings.TrimPrefix(info.Key, p); name != "" && !strings.Contains(name, "/") {
			out = append(out, name)
		}
	}
	return out, nil
}
