package wal

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs"
	"go.uber.org/goleak"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: from the clock, or $TABULA_SEED)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRand returns a seeded generator and logs the seed so a failure replays
// with -seed.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		if s, err := strconv.ParseUint(os.Getenv("TABULA_SEED"), 10, 64); err == nil {
			seed = s
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// randomPayloads returns n payloads of 0..maxLen random bytes.
func randomPayloads(r *rand.Rand, n, maxLen int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		p := make([]byte, r.IntN(maxLen+1))
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		out[i] = p
	}
	return out
}

// replayAll replays dir from segment from and returns copies of the payloads.
func replayAll(t testing.TB, dir string, from uint64) ([][]byte, uint64, error) {
	t.Helper()
	return replayAllOn(t, vfs.Default, dir, from)
}

// replayAllOn is replayAll on fsys.
func replayAllOn(t testing.TB, fsys vfs.FS, dir string, from uint64) ([][]byte, uint64, error) {
	t.Helper()
	var got [][]byte
	last, err := Replay(fsys, dir, from, func(p []byte) error {
		got = append(got, slices.Clone(p))
		return nil
	})
	return got, last, err
}

// equalPayloads reports whether a and b hold the same payloads, treating nil
// and empty alike.
func equalPayloads(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}

// diskSize sums the sizes of the segment files in dir.
func diskSize(t testing.TB, dir string) int64 {
	t.Helper()
	nums, err := listSegments(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range nums {
		st, err := os.Stat(filepath.Join(dir, segmentName(n)))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	return total
}

func mustOpen(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
