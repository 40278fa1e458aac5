package verify

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/verify/storeproxy"
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
	// proxy stands between the store and every Tabula process, to make
	// the store slow, throttle or cut connections (storefaults.go); url
	// names the proxy.
	proxy *storeproxy.Proxy
	url   string
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
	if c.store.proxy, err = storeproxy.Start(srv.Endpoint()); err != nil {
		return fmt.Errorf("verify: starting the proxy in front of SeaweedFS: %w", err)
	}
	c.store.url = "s3://tabula/verify?endpoint=" + c.store.proxy.Endpoint()
	c.o.Logf("tablets on SeaweedFS at %s through a fault proxy: %s (log %s)", srv.Endpoint(), c.store.url, filepath.Join(dir, "weed.log"))
	return nil
}

// closeObjectStore stops the proxy and SeaweedFS.
func (c *Cluster) closeObjectStore() {
	if c.store.proxy != nil {
		c.store.proxy.Close()
	}
	if c.store.srv != nil {
		c.store.srv.Close()
	}
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
// until it takes writes: its S3 gateway answers reads at once, but the
// first write after a restart waits ~11 s in SeaweedFS itself (its master
// elects itself again first), and that wait is the store's, not Tabula's
// recovery, which the agitator measures from here.
func (c *Cluster) restartStore(ctx context.Context) error {
	if err := c.store.srv.Restart(ctx); err != nil {
		return fmt.Errorf("verify: restarting SeaweedFS: %w", err)
	}
	c.store.down = false
	answered := time.Now()
	if err := c.waitStoreWritable(ctx); err != nil {
		return err
	}
	c.o.Logf("SeaweedFS takes writes again %v after its S3 port answered", time.Since(answered).Round(time.Millisecond))
	return nil
}

// waitStoreWritable writes a probe object straight to SeaweedFS (not
// through the proxy) until one write succeeds, for up to ReadyTimeout.
func (c *Cluster) waitStoreWritable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.ReadyTimeout)
	defer cancel()
	url := c.store.srv.Endpoint() + "/tabula/verify-write-probe"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader("probe"))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("verify: SeaweedFS takes no writes %v after its restart: %w", c.o.ReadyTimeout, err)
		}
	}
}
