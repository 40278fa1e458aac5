package backup

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
)

func sampleManifest() *Manifest {
	return &Manifest{Name: "t.20261207T000000.000Z", Table: "t", Snapshot: "s", SnapshotID: "s.0a0b0c0d", CreatedMicros: 1,
		Schema: []byte(`{"name":"t"}`),
		Tablets: []Tablet{{ID: "a1", State: manifest.State{RangeEnd: []byte("m"), Files: []manifest.FileRef{{Family: "cf", Path: "cf/000001.sst", Size: 10}}}},
			{ID: "b2", State: manifest.State{RangeStart: []byte("m"), Files: []manifest.FileRef{{Family: "cf", Path: "../a1/cf/000001.sst", Size: 10}}}}},
		Files: []File{{Path: "t/a1/cf/000001.sst", Size: 10, CRC32C: 0xdeadbeef}}}
}

// TestManifestRoundTrip: a manifest decodes to what was encoded, and every
// byte of it is covered by its checksum.
func TestManifestRoundTrip(t *testing.T) {
	b, err := sampleManifest().Encode()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode("x", b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := m.Encode()
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed the manifest:\n%s\n%s", b, b2)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x20
		if _, err := Decode("x", c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a flipped byte %d decodes: %v", i, err)
		}
	}
}

// TestManifestRefusesPathsOutside: a manifest whose files or tablets name a
// path outside files/<table>/, or a file no entry lists, is corrupt: a
// location's manifest is never trusted to make delete or restore touch
// anything else.
func TestManifestRefusesPathsOutside(t *testing.T) {
	for name, mut := range map[string]func(*Manifest){
		"file outside":        func(m *Manifest) { m.Files[0].Path = "../etc/passwd" },
		"absolute file":       func(m *Manifest) { m.Files[0].Path = "/t/a1/cf/000001.sst" },
		"tablet climbs":       func(m *Manifest) { m.Tablets[0].State.Files[0].Path = "../../other/x/cf/1.sst" },
		"tablet file unknown": func(m *Manifest) { m.Tablets[0].State.Files[0].Path = "cf/000002.sst" },
		"bad name":            func(m *Manifest) { m.Name = "a/b" },
		"bad tablet id":       func(m *Manifest) { m.Tablets[0].ID = ".." },
		"file twice":          func(m *Manifest) { m.Files = append(m.Files, m.Files[0]) },
	} {
		m := sampleManifest()
		mut(m)
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode("x", b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decoded (%v)", name, err)
		}
	}
}

// FuzzDecodeManifest: any input decodes or fails with ErrCorrupt, never
// panics, and what decodes encodes to input that decodes the same.
func FuzzDecodeManifest(f *testing.F) {
	b, _ := sampleManifest().Encode()
	f.Add(b)
	f.Add([]byte("tabula-backup 1\n{}\ncrc32c 00000000\n"))
	f.Add([]byte("tabula-backup 2\n{\"name\":\"x\"}\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Decode("fuzz", in)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode("again", out); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
	})
}

// FuzzDecodeManifestBody fuzzes what is behind the checksum: the fuzzed
// JSON is sealed with a valid header and CRC32C, so mutations reach the
// field checks (paths, names, tablets) instead of failing the checksum.
func FuzzDecodeManifestBody(f *testing.F) {
	b, _ := sampleManifest().Encode()
	_, body, _ := bytes.Cut(b, []byte("\n"))
	f.Add(body[:bytes.IndexByte(body, '\n')])
	f.Add([]byte(`{"name":"a","table":"t","files":[{"path":"t/x/cf/1.sst","size":1}],"tablets":[{"id":"x","state":{"files":[{"path":"cf/1.sst"}]}}]}`))
	f.Add([]byte(`{"name":"..","files":[{"path":"../x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if bytes.IndexByte(body, '\n') >= 0 {
			return
		}
		in := fmt.Appendf(nil, "%s %d\n%s\n", manifestMagic, manifestVersion, body)
		in = fmt.Appendf(in, "%s%08x\n", crcPrefix, crc32.Checksum(in, castagnoli))
		m, err := Decode("fuzz", in)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		for _, f := range m.Files {
			if validRel(f.Path) != nil {
				t.Fatalf("decoded a file path outside files/: %q", f.Path)
			}
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode("again", out); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
	})
}

// TestOwnSnapshotNameFits: the snapshot of a backup of the longest
// namespaced table is a valid snapshot name (at most 100 characters),
// and keeps the backup's time.
func TestOwnSnapshotNameFits(t *testing.T) {
	table := strings.Repeat("n", 33) + ":" + strings.Repeat("t", 50)
	name := plainName(table) + ".20261207T011600.123Z"
	got := ownSnapshotName(name)
	if len(got) > 100 || !strings.HasPrefix(got, "backup-") || !strings.HasSuffix(got, ".20261207T011600.123Z") {
		t.Fatalf("ownSnapshotName(%s) = %s (%d characters)", name, got, len(got))
	}
	if got := ownSnapshotName("users.x"); got != "backup-users.x" {
		t.Fatalf("a short name: %s", got)
	}
}
