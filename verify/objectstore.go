package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tabuladb/tabula/internal/seaweed"
)

// storeName names the object store in fault events and logs.
const storeName = "seaweed"

// objectStore is what ClusterOptions.ObjectStore adds to a cluster:
// SeaweedFS in Dir/seaweed holding the tablets under url, which the masters
// and every tablet server take as --storage, each server keeping only its
// upload spool and SSTable cache in its own Dir/hosts/<id>. Its zero value
// is a cluster whose servers share the local folder Dir/storage.
type objectStore struct {
	srv *seaweed.Server
	url string
	// down: the agitator killed the store and has not restarted it (the
	// seaweed package does not say whether its process is running).
	down bool
}

// checkWeed fails unless SeaweedFS's weed binary is there, before anything
// starts, so that a missing binary is one clear error rather than a
// cluster torn down halfway.
func checkWeed() error {
	bin, err := seaweed.Binary()
	if err != nil {
		return fmt.Errorf("verify: the object store: %w", err)
	}
	// Binary trusts TABULA_WEED without looking.
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("verify: the object store: no weed binary (%v): run `make tools` (it builds .tools/bin/weed) or set TABULA_WEED", err)
	}
	return nil
}

// startObjectStore starts SeaweedFS with the bucket "tabula" (nothing on
// a cluster without ObjectStore).
func (c *Cluster) startObjectStore(ctx context.Context) error {
	if !c.o.ObjectStore {
		return nil
	}
	dir := filepath.Join(c.o.Dir, "seaweed")
	srv, err := seaweed.Start(ctx, seaweed.Config{Dir: dir, Bucket: "tabula"})
	if err != nil {
		return fmt.Errorf("verify: starting SeaweedFS: %w", err)
	}
	c.store.srv = srv
	c.store.url = "s3://tabula/verify?endpoint=" + srv.Endpoint()
	c.o.Logf("tablets on SeaweedFS: %s (log %s)", c.store.url, filepath.Join(dir, "weed.log"))
	return nil
}

// StorageURL returns the --storage URL of an ObjectStore cluster ("" for
// one on a local folder).
func (c *Cluster) StorageURL() string { return c.store.url }

// masterStorageArgs are a master's storage flags: the store's URL, or the
// shared folder as its root (so that it deletes and sweeps there).
func (c *Cluster) masterStorageArgs() []string {
	if c.o.ObjectStore {
		return []string{"--storage", c.store.url}
	}
	return []string{"--storage-root", c.localStorage()}
}

// serverStorageArgs are a tablet server's storage flags.
func (c *Cluster) serverStorageArgs(name string) []string {
	if c.o.ObjectStore {
		return []string{"--data", c.hostDir(name), "--storage", c.store.url}
	}
	return []string{"--data", c.localStorage()}
}

// localStorage is the folder every tablet server shares without an
// object store.
func (c *Cluster) localStorage() string { return filepath.Join(c.o.Dir, "storage") }

// hostDir is a tablet server's own --data folder with an object store.
func (c *Cluster) hostDir(name string) string { return filepath.Join(c.o.Dir, "hosts", name) }

// wipeHost deletes a stopped tablet server's --data folder, as if its host
// were replaced: on an object store nothing there may be needed (the
// server creates the folder again at start).
func (c *Cluster) wipeHost(p *proc) error {
	if !c.o.ObjectStore {
		return fmt.Errorf("verify: %s shares the storage folder; deleting it would lose every tablet", p.name)
	}
	if p.running() {
		return fmt.Errorf("verify: %s is running; its folder stays", p.name)
	}
	return os.RemoveAll(c.hostDir(p.name))
}

// killStore kills SeaweedFS at once (kill -9 of its process group).
func (c *Cluster) killStore() {
	c.store.down = true
	c.store.srv.Kill()
}

// restartStore starts SeaweedFS again on its ports and data and waits
// until its S3 gateway answers.
func (c *Cluster) restartStore(ctx context.Context) error {
	if err := c.store.srv.Restart(ctx); err != nil {
		return fmt.Errorf("verify: restarting SeaweedFS: %w", err)
	}
	c.store.down = false
	return nil
}
