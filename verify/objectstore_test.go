package verify

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// storeCluster is an ObjectStore Cluster with a made-up store URL and no
// processes.
func storeCluster(t *testing.T) *Cluster {
	t.Helper()
	o, err := ClusterOptions{Dir: t.TempDir(), Binary: "tabula", ObjectStore: true}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{o: o}
	c.store.url = "s3://tabula/verify?endpoint=http://127.0.0.1:1"
	if c.etcd, err = c.etcdProc(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestObjectStoreClusterGivesEveryProcessTheStoreAndServersTheirOwnFolder(t *testing.T) {
	c := storeCluster(t)
	m, err := c.masterProc(0)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := flagValue(m.args, "--storage"); got != c.store.url {
		t.Errorf("master: --storage = %q, want %q (args %q)", got, c.store.url, m.args)
	}
	if slices.Contains(m.args, "--storage-root") {
		t.Errorf("master on an object store passes --storage-root too (args %q)", m.args)
	}
	datas := map[string]bool{}
	for i := range 3 {
		s, err := c.serverProc(i)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := flagValue(s.args, "--storage"); got != c.store.url {
			t.Errorf("%s: --storage = %q, want %q (args %q)", s.name, got, c.store.url, s.args)
		}
		data, _ := flagValue(s.args, "--data")
		if want := filepath.Join(c.o.Dir, "hosts", s.name); data != want {
			t.Errorf("%s: --data = %q, want %q", s.name, data, want)
		}
		datas[data] = true
	}
	if len(datas) != 3 {
		t.Errorf("three servers share --data folders: %v", datas)
	}
}

func TestLocalClusterSharesOneStorageFolder(t *testing.T) {
	c := testCluster(t, false)
	var err error
	if c.etcd, err = c.etcdProc(); err != nil {
		t.Fatal(err)
	}
	m, err := c.masterProc(0)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(c.o.Dir, "storage")
	if got, _ := flagValue(m.args, "--storage-root"); got != want || slices.Contains(m.args, "--storage") {
		t.Errorf("master: --storage-root = %q, want %q and no --storage (args %q)", got, want, m.args)
	}
	for i := range 2 {
		s, err := c.serverProc(i)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := flagValue(s.args, "--data"); got != want || slices.Contains(s.args, "--storage") {
			t.Errorf("%s: --data = %q, want %q and no --storage (args %q)", s.name, got, want, s.args)
		}
	}
}

// Without a weed binary an ObjectStore cluster fails before starting
// anything, and says how to get one.
func TestObjectStoreWithoutWeedSaysMakeTools(t *testing.T) {
	t.Setenv("TABULA_WEED", filepath.Join(t.TempDir(), "no-weed"))
	dir := filepath.Join(t.TempDir(), "cluster")
	_, err := StartCluster(context.Background(), ClusterOptions{Dir: dir, Binary: "tabula", ObjectStore: true})
	if err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("StartCluster without weed: %v, want an error naming `make tools`", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cluster folder was made (%v): something started before the check", err)
	}
}

func TestStoreFaultsOnlyOnAnObjectStore(t *testing.T) {
	for _, k := range []FaultKind{FaultStoreRestart, FaultStoreSlow, FaultStoreThrottle, FaultStoreCut} {
		if slices.Contains(DefaultFaults(false), k) || !slices.Contains(DefaultFaults(true), k) {
			t.Errorf("%s: default faults: %v without a store, %v with one", k, DefaultFaults(false), DefaultFaults(true))
		}
		if err := CheckFaults([]FaultKind{k}, false); err == nil {
			t.Errorf("%s accepted on a cluster without an object store", k)
		}
		if _, err := ParseFaultKind(string(k)); err != nil {
			t.Error(err)
		}
	}
	if err := CheckFaults(AllFaults, true); err != nil {
		t.Error(err)
	}
	if !slices.Contains(DefaultFaults(false), FaultServerKill) {
		t.Errorf("default faults without a store: %v", DefaultFaults(false))
	}
}

// Every other server kill on an object store, the first included, wipes;
// no other fault does, and nothing does on a local cluster.
func TestServerKillWipesEveryOtherHost(t *testing.T) {
	a := &agitator{c: storeCluster(t)}
	var got []bool
	for _, k := range []FaultKind{FaultServerKill, FaultMasterKill, FaultServerKill, FaultServerStop, FaultServerKill} {
		got = append(got, a.wipes(k))
	}
	if want := []bool{true, false, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("wipes %v, want %v", got, want)
	}
	local := &agitator{c: testCluster(t, false)}
	if local.wipes(FaultServerKill) {
		t.Error("a server kill on a shared local folder wipes it")
	}
}

func TestWipeHostDeletesOnlyThatServersFolder(t *testing.T) {
	c := storeCluster(t)
	var procs []*proc
	for i := range 2 {
		s, err := c.serverProc(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(c.hostDir(s.name), "spool"), 0o755); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, s)
	}
	if err := c.wipeHost(procs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.hostDir(procs[0].name)); !os.IsNotExist(err) {
		t.Errorf("%s's folder is still there (%v)", procs[0].name, err)
	}
	if _, err := os.Stat(c.hostDir(procs[1].name)); err != nil {
		t.Errorf("%s's folder went too: %v", procs[1].name, err)
	}
	if err := testCluster(t, false).wipeHost(procs[1]); err == nil {
		t.Error("wipeHost deleted a shared local storage folder")
	}
}
