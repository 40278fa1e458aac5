package sstable

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0: from the clock, or $SSTABLE_SEED)")

// testRand returns a seeded generator and logs the seed so that a failure
// replays with -seed.
func testRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		if s, err := strconv.ParseInt(os.Getenv("SSTABLE_SEED"), 10, 64); err == nil {
			seed = s
		}
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

type kv struct {
	key, value []byte
	k          cell.Key
}

// randomEntries returns n distinct cell entries in key order: a mix of
// family tombstones, column tombstones and cells over a few hundred rows,
// with values up to maxValue bytes.
func randomEntries(rng *rand.Rand, n, maxValue int) []kv {
	seen := make(map[string]bool, n)
	out := make([]kv, 0, n)
	rows := max(n/8, 1)
	for len(out) < n {
		k := cell.Key{
			Row:       []byte("row-" + strconv.Itoa(rng.Intn(rows))),
			Qualifier: []byte("q" + strconv.Itoa(rng.Intn(6))),
			Timestamp: rng.Int63n(1 << 50),
			Seq:       uint64(rng.Int63n(1 << 40)),
			Kind:      cell.KindSet,
		}
		if rng.Intn(4) == 0 {
			k.Row = append(k.Row, 0, byte(rng.Intn(256))) // escaped bytes
		}
		var v []byte
		switch rng.Intn(20) {
		case 0:
			k.Kind, k.Qualifier, k.Timestamp = cell.KindDeleteFamily, nil, 0
		case 1:
			k.Kind, k.Timestamp = cell.KindDeleteColumn, 0
			v = cell.AppendDeleteRange(nil, rng.Int63n(1000), 0)
		default:
			v = make([]byte, rng.Intn(maxValue+1))
			if rng.Intn(2) == 0 {
				rng.Read(v) // incompressible
			} else {
				for i := range v {
					v[i] = "abcab"[i%5] // compressible
				}
			}
		}
		key := cell.AppendKey(nil, k)
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		out = append(out, kv{key: key, value: v, k: k})
	}
	sortEntries(out)
	return out
}

func sortEntries(es []kv) {
	sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].key, es[j].key) < 0 })
}

// writeTable writes entries to a new file in dir and returns its path and
// the writer's properties.
func writeTable(t testing.TB, dir string, opts WriterOptions, entries []kv) (string, Properties) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%06d.sst", tableNum.Add(1)))
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, opts)
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return path, w.Properties()
}

// tableNum numbers the files writeTable creates.
var tableNum atomic.Int64

func openTable(t testing.TB, path string, opts ReaderOptions) *Reader {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// collect iterates from First to the end, failing the test on an error.
func collect(t testing.TB, it *Iter) []kv {
	t.Helper()
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{key: bytes.Clone(it.Key()), value: bytes.Clone(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return out
}

func sameEntries(t testing.TB, what string, got, want []kv) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].key, want[i].key) || !bytes.Equal(got[i].value, want[i].value) {
			t.Fatalf("%s: entry %d is %q=%.20q, want %q=%.20q", what, i, got[i].key, got[i].value, want[i].key, want[i].value)
		}
	}
}
