package s3fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
	"github.com/tabuladb/tabula/vfs/vfstest"
)

// startStore starts SeaweedFS with bucket "tabula", stopped by t.Cleanup.
func startStore(t testing.TB) *seaweed.Server {
	return seaweedtest.Start(t, seaweed.Config{Bucket: "tabula"})
}

func config(t testing.TB, srv *seaweed.Server, prefix string) Config {
	c, err := ParseURL("s3://tabula/"+prefix+"?endpoint="+srv.Endpoint(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c.Root = "/storage"
	c.SpoolDir = t.TempDir()
	c.Timeout = 20 * time.Second
	return c
}

// TestConformance runs the same checks as the local disk's.
func TestConformance(t *testing.T) {
	srv := startStore(t)
	fsys, err := Open(context.Background(), config(t, srv, "conf"))
	if err != nil {
		t.Fatal(err)
	}
	vfstest.Run(t, fsys, "/storage")
}

// TestPartsPerSync: a file is one object per Sync (what the commit log's
// group commit relies on), and prefixes keep clusters apart.
func TestPartsPerSync(t *testing.T) {
	srv := startStore(t)
	a, err := Open(context.Background(), config(t, srv, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), config(t, srv, "b"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Create("/storage/x.log")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.Write([]byte{byte(i)})
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	ctx := context.Background()
	ps, _, err := a.parts(ctx, "a/x.log")
	if err != nil || len(ps) != 3 {
		t.Fatalf("parts = %d, %v; want 3 (one per Sync)", len(ps), err)
	}
	if _, err := b.Stat("/storage/x.log"); err == nil {
		t.Fatal("prefix b sees prefix a's file")
	}
	if _, err := a.Create("/elsewhere/x"); err == nil || !strings.Contains(err.Error(), "outside the storage root") {
		t.Fatalf("a name outside the root: %v", err)
	}
	if err := a.RemoveAll("/storage"); err == nil {
		t.Fatal("RemoveAll of the root succeeded")
	}
}

// TestOpenFailsClearly: a missing bucket and an unreachable endpoint are
// errors at Open that say so, within the timeout.
func TestOpenFailsClearly(t *testing.T) {
	srv := startStore(t)
	c := config(t, srv, "p")
	c.Bucket = "no-such-bucket"
	if _, err := Open(context.Background(), c); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
	c = config(t, srv, "p")
	c.Endpoint = "127.0.0.1:1"
	c.Timeout = 3 * time.Second
	if _, err := Open(context.Background(), c); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("unreachable endpoint: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk"}
	c, err := ParseURL("s3://bkt/some/prefix/?endpoint=http://127.0.0.1:8333&region=eu-1", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Bucket != "bkt" || c.Prefix != "some/prefix" || c.Endpoint != "127.0.0.1:8333" || c.Secure || c.Region != "eu-1" || c.AccessKey != "ak" || c.SecretKey != "sk" {
		t.Fatalf("ParseURL = %+v", c)
	}
	for _, bad := range []string{"", "s3://", "http://bkt/x", "s3://bkt?endpoint=ftp://h", "s3://bkt?endpoint=http://h:1/path", "s3://bkt?colour=red", "/data/dir"} {
		if _, err := ParseURL(bad, func(string) string { return "" }); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
	if _, err := ParseURL("s3://bkt", func(k string) string { return map[string]string{"AWS_ACCESS_KEY_ID": "x"}[k] }); err == nil {
		t.Error("a key without a secret was accepted")
	}
}

// TestRemoveAllManyObjects: a tree of more objects than one multi-delete
// request takes (a busy commit log segment is one object per group
// commit) is removed whole.
func TestRemoveAllManyObjects(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "many"))
	if err != nil {
		t.Fatal(err)
	}
	dir := "/storage/tables/t/tab/log"
	if err := f.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	w, err := f.Create(dir + "/000001.log")
	if err != nil {
		t.Fatal(err)
	}
	const parts = 1100
	for i := range parts {
		w.Write([]byte{byte(i)})
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if info, err := f.Stat(dir + "/000001.log"); err != nil || info.Size != parts {
		t.Fatalf("Stat = %+v, %v; want %d bytes", info, err, parts)
	}
	if err := f.RemoveAll("/storage/tables/t"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ps, _, err := f.parts(ctx, "many/tables/t/tab/log/000001.log"); err != nil || len(ps) != 0 {
		t.Fatalf("%d parts left after RemoveAll (%v)", len(ps), err)
	}
	if _, err := f.Stat("/storage/tables/t"); err == nil {
		t.Fatal("the tree is still there")
	}
}

// TestCredentialsAreChecked: with access keys configured on the store, a
// wrong secret and a key that may only read both fail at Open with an
// error that names the credentials; the right key works.
func TestCredentialsAreChecked(t *testing.T) {
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "tabula", S3Config: `{"identities": [
		{"name": "admin", "credentials": [{"accessKey": "ADMINKEY", "secretKey": "adminsecret"}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
		{"name": "reader", "credentials": [{"accessKey": "READKEY", "secretKey": "readsecret"}], "actions": ["Read", "List"]}]}`})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	with := func(ak, sk string) Config {
		c := config(t, srv, "creds")
		c.AccessKey, c.SecretKey = ak, sk
		return c
	}
	// weed creates the bucket just after its gateway answers.
	for {
		_, err := Open(ctx, with("ADMINKEY", "adminsecret"))
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "does not exist") || ctx.Err() != nil {
			t.Fatalf("the right key: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct{ what, ak, sk string }{
		{"a wrong secret", "ADMINKEY", "wrong"},
		{"a read-only key", "READKEY", "readsecret"},
		{"no key", "", ""},
	} {
		_, err := Open(ctx, with(c.ak, c.sk))
		t.Logf("%s: %v", c.what, err)
		if err == nil || !strings.Contains(err.Error(), "credentials") {
			t.Errorf("%s: %v; want an error naming the credentials", c.what, err)
		}
	}
}

// TestReadAcrossManyParts: a file of many parts (a commit log segment gets
// one per group commit) reads back exactly by ReadAt at any offset and
// length, the parts of one read being fetched in parallel.
func TestReadAcrossManyParts(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "parts"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Create("/storage/seg.log")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	var want []byte
	for range 120 {
		chunk := make([]byte, 1+rng.Intn(700))
		rng.Read(chunk)
		want = append(want, chunk...)
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := f.Open("/storage/seg.log")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != int64(len(want)) {
		t.Fatalf("Size() = %d, want %d", r.Size(), len(want))
	}
	all := make([]byte, len(want))
	if n, err := r.ReadAt(all, 0); n != len(want) || err != nil || !bytes.Equal(all, want) {
		t.Fatalf("ReadAt of the whole file: %d, %v, equal %v", n, err, bytes.Equal(all, want))
	}
	for range 50 {
		off := rng.Intn(len(want))
		buf := make([]byte, rng.Intn(len(want)))
		n, err := r.ReadAt(buf, int64(off))
		end := min(off+len(buf), len(want))
		if n != end-off || !bytes.Equal(buf[:n], want[off:end]) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; bytes differ", len(buf), off, n, err)
		}
		if (end < off+len(buf)) != (err == io.EOF) {
			t.Fatalf("ReadAt(%d bytes at %d) of a %d-byte file: err %v", len(buf), off, len(want), err)
		}
	}
}

// BenchmarkReadManyParts reads a 1,000-part file (a commit log segment of
// 1,000 group commits of 1 KiB) in 256 KiB reads, as replay does, with the
// parts of each read fetched one at a time and in parallel.
func BenchmarkReadManyParts(b *testing.B) {
	srv := startStore(b)
	f, err := Open(context.Background(), config(b, srv, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	w, err := f.Create("/storage/seg.log")
	if err != nil {
		b.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 1024)
	for range 1000 {
		w.Write(chunk)
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	for _, par := range []int{1, 16} {
		b.Run(fmt.Sprintf("parallel=%d", par), func(b *testing.B) {
			defer func(old int) { maxParallelGets = old }(maxParallelGets)
			maxParallelGets = par
			buf := make([]byte, 256<<10)
			for b.Loop() {
				r, err := f.Open("/storage/seg.log")
				if err != nil {
					b.Fatal(err)
				}
				for off := int64(0); off < r.Size(); off += int64(len(buf)) {
					if _, err := r.ReadAt(buf, off); err != nil && err != io.EOF {
						b.Fatal(err)
					}
				}
				r.Close()
			}
		})
	}
}
