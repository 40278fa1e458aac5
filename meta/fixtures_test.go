package meta

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// Frozen fixtures: the files under testdata/v1/ hold etcd values exactly as
// EncodeServer, EncodeTablet and EncodeTable wrote them before records
// carried lease IDs. They stand for clusters already running: after an
// upgrade the master and the servers read what older releases stored, so
// every later release must decode them to the records below. A failure
// means old metadata no longer decodes: fix the code, never the fixture.
// protojson varies its whitespace from build to build on purpose, so etcd
// holds schemas in either spelling: table.json has no spaces after ':' and
// ',' and table-deleting.json has them. table-protected.json came later,
// with deletion protection and declared family types: frozen the same way
// from then on.
//
// The comparison covers the fields these files hold, one by one, so that
// fields added later (absent from the files, zero when decoded) do not
// break it. A decoder that requires a new field breaks it, as it breaks a
// rolling upgrade.
//
// To write the fixtures that do not exist yet (it never overwrites one):
//
//	go test ./meta -run TestFrozenRecords -update-fixtures
var updateFixtures = flag.Bool("update-fixtures", false, "write missing frozen fixtures under testdata/")

var (
	fixtureServer = ServerRecord{ID: "ts-1", Address: "10.0.0.7:7070", StartTime: 1_700_000_000_123_456}

	fixtureTablets = map[string]TabletRecord{
		// The first tablet of a new table.
		"tablet-unassigned.json": {Table: "users", ID: "00000000000000a1", State: StateUnassigned},
		// The last tablet of the table (no end), with a binary start.
		"tablet-assigned.json": {Table: "users", ID: "9c41e0d2b7a35f18", Start: []byte("t\x00\xff\x01"), State: StateAssigned,
			Server: "ts-2", Address: "10.0.0.8:7070", Epoch: 3, Parent: "00000000000000a1"},
		// A split child being served.
		"tablet-serving.json": {Table: "users", ID: "5f3a9c0d12e4b687", Start: []byte("m"), End: []byte("t\x00\xff\x01"), State: StateServing,
			Server: "ts-1", Address: "10.0.0.7:7070", Epoch: 7, Parent: "00000000000000a1"},
	}

	fixtureTables = map[string]*tabulapb.TableSchema{
		"table.json": {Name: "users", SplitThresholdBytes: 256 << 20, State: TableEnabled, Families: []*tabulapb.Family{
			{Name: "cf", MaxVersions: 3, TtlMicros: 86_400_000_000, Gc: tabulapb.GCMode_GC_INTERSECTION,
				Compression: tabulapb.Compression_COMPRESSION_SNAPPY, Bloom: tabulapb.Bloom_BLOOM_ROW_COLUMN,
				BlockSize: 32 << 10, InMemory: true},
			{Name: "raw", Compression: tabulapb.Compression_COMPRESSION_ZSTD, Bloom: tabulapb.Bloom_BLOOM_ROW},
			{Name: "plain"},
		}},
		"table-deleting.json": {Name: "old", State: TableDeleting, Families: []*tabulapb.Family{{Name: "cf"}}},
		// Deletion protection, and a plain family with a declared Bigtable
		// type (a serialized string type), as the master stores them.
		"table-protected.json": {Name: "ledger", State: TableEnabled, DeletionProtection: true, Families: []*tabulapb.Family{
			{Name: "note", DeclaredType: []byte{0x1a, 0x06, 0x0a, 0x04, 0x12, 0x02, 0x0a, 0x00}},
			{Name: "total", ValueType: tabulapb.ValueType_VALUE_TYPE_SUM},
		}},
	}
)

const fixtureDir = "testdata/v1"

func TestFrozenRecords(t *testing.T) {
	if *updateFixtures {
		writeFixtureRecord(t, "server.json", EncodeServer(fixtureServer))
		for name, r := range fixtureTablets {
			writeFixtureRecord(t, name, EncodeTablet(r))
		}
		for name, s := range fixtureTables {
			writeFixtureRecord(t, name, EncodeTable(TableRecord{Schema: s}))
		}
	}

	t.Run("server.json", func(t *testing.T) {
		got, err := DecodeServer(readFixtureRecord(t, "server.json"))
		if err != nil {
			t.Fatal(err)
		}
		w := fixtureServer
		if got.ID != w.ID || got.Address != w.Address || got.StartTime != w.StartTime {
			t.Errorf("got %+v, want %+v", got, w)
		}
	})
	for name, w := range fixtureTablets {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeTablet(readFixtureRecord(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if got.Table != w.Table || got.ID != w.ID || !bytes.Equal(got.Start, w.Start) || !bytes.Equal(got.End, w.End) ||
				got.State != w.State || got.Server != w.Server || got.Address != w.Address || got.Epoch != w.Epoch || got.Parent != w.Parent {
				t.Errorf("got %+v, want %+v", got, w)
			}
		})
	}
	for name, w := range fixtureTables {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeTable(readFixtureRecord(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.Schema, w) {
				t.Errorf("got %v, want %v", got.Schema, w)
			}
		})
	}
}

func readFixtureRecord(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFixtureRecord writes value as the fixture name, unless it exists.
func writeFixtureRecord(t *testing.T, name, value string) {
	t.Helper()
	path := filepath.Join(fixtureDir, name)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Logf("%s exists; not overwriting it", path)
		return
	}
	if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
