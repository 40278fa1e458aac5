package tablet

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

func sampleBatch() batch {
	return batch{seq: 42, row: []byte("row\x00key"), entries: []entry{
		{family: "a", kind: cell.KindDeleteFamily},
		{family: "a", kind: cell.KindDeleteColumn, qualifier: []byte("q"), timestamp: 5, value: cell.AppendDeleteRange(nil, 5, 9)},
		{family: "b", kind: cell.KindSet, qualifier: []byte{}, timestamp: 1 << 50, value: []byte("value")},
	}}
}

func TestBatchRoundTrip(t *testing.T) {
	b := sampleBatch()
	enc := b.encode(nil)
	got, err := decodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got.seq != b.seq || !bytes.Equal(got.row, b.row) || len(got.entries) != len(b.entries) || !bytes.Equal(got.encode(nil), enc) {
		t.Fatalf("got %+v, want %+v", got, b)
	}
	for i, e := range got.entries {
		w := b.entries[i]
		if e.family != w.family || e.kind != w.kind || !bytes.Equal(e.qualifier, w.qualifier) || e.timestamp != w.timestamp || !bytes.Equal(e.value, w.value) {
			t.Fatalf("entry %d: got %+v, want %+v", i, e, w)
		}
	}
	for i := 0; i < len(enc); i++ {
		if _, err := decodeBatch(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

func TestNormalizeResolvesOrderInsideABatch(t *testing.T) {
	muts := []cell.Mutation{
		set("a", "q", 1, "x"), set("a", "q", 1, "y"), // later same cell wins
		set("b", "z", 3, "gone"), delFam("b"), set("b", "z", 4, "kept"),
		delCol("a", "r", 0, 10), delCol("a", "r", 0, 0), // same start: widest range
		{Kind: cell.DeleteRow},
	}
	es := normalize(muts, []string{"a", "b"}, 99)
	if len(es) != 2 || es[0].kind != cell.KindDeleteFamily || es[1].kind != cell.KindDeleteFamily {
		t.Fatalf("delete row must leave only family tombstones: %+v", es)
	}
	es = normalize(muts[:7], []string{"a", "b"}, 99)
	var got []string
	for _, e := range es {
		got = append(got, e.family+"/"+e.kind.String()+"/"+string(e.qualifier)+"/"+string(e.value))
	}
	want := []string{"a/set/q/y", "a/delete-column/r/" + string(cell.AppendDeleteRange(nil, 0, 0)), "b/delete-family//", "b/set/z/kept"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if es := normalize([]cell.Mutation{set("a", "q", cell.ServerTimestamp, "v")}, nil, 77); es[0].timestamp != 77 {
		t.Fatalf("server timestamp not stamped: %d", es[0].timestamp)
	}
}

func FuzzDecodeBatch(f *testing.F) {
	b := sampleBatch()
	f.Add(b.encode(nil))
	f.Add([]byte{batchVersion})
	f.Add([]byte("\x0100000000\x010\x80\x00")) // a non-minimal varint must not decode
	f.Add([]byte{batchVersion, 1, 0, 0, 0, 0, 0, 0, 0, 1, 'r', 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := decodeBatch(p)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if re := b.encode(nil); !bytes.Equal(re, p) {
			t.Fatalf("re-encoding differs:\n%x\n%x", re, p)
		}
	})
}

var normalizeSeed = flag.Int64("normalize.seed", 0, "seed of TestNormalizeLargeMatchesReplay (0 = random)")

// The O(n log n) normalization must give exactly what replaying the
// mutations one by one gives, on random requests full of collisions.
func TestNormalizeLargeMatchesReplay(t *testing.T) {
	seed := *normalizeSeed
	if seed == 0 {
		seed = rand.Int63()
	}
	t.Logf("seed %d (replay with -normalize.seed=%d)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	fams := []string{"a", "b", "c"}
	for iter := 0; iter < 3000; iter++ {
		n := r.Intn(60)
		muts := make([]cell.Mutation, n)
		for i := range muts {
			f, q := fams[r.Intn(len(fams))], string(rune('p'+r.Intn(3)))
			ts := int64(r.Intn(8))
			if r.Intn(10) == 0 {
				ts = cell.ServerTimestamp
			}
			switch k := r.Intn(20); {
			case k < 12:
				muts[i] = set(f, q, ts, fmt.Sprint(i))
			case k < 18:
				start, end := int64(r.Intn(6)), int64(0)
				if r.Intn(3) > 0 {
					end = start + 1 + int64(r.Intn(5))
				}
				muts[i] = delCol(f, q, start, end)
			case k < 19:
				muts[i] = delFam(f)
			default:
				muts[i] = delRow()
			}
		}
		want := render2(appendNormalizedSmall(nil, muts, fams, 5))
		got := render2(appendNormalizedLarge(nil, muts, fams, 5))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("iteration %d, mutations %+v:\nlarge  %q\nreplay %q", iter, muts, got, want)
		}
	}
}

func render2(es []entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s/%s/%s/%d/%x", e.family, e.kind, e.qualifier, e.timestamp, e.value))
	}
	return out
}

// 40,000 mutations of one row took 6.5 s when normalization was
// quadratic; this benchmark shows it is not any more.
func BenchmarkNormalizeWideRow(b *testing.B) {
	for _, n := range []int{5000, 40000, 100000} {
		muts := make([]cell.Mutation, n)
		for i := range muts {
			muts[i] = set("a", fmt.Sprintf("q%07d", i), 1, "v")
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				appendNormalized(nil, muts, []string{"a"}, 1)
			}
		})
	}
}

// A row may carry up to cell.MaxMutationsPerRow mutations in one request;
// one more is refused with an error that says what to do.
func TestWideRowLimit(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	muts := make([]cell.Mutation, cell.MaxMutationsPerRow+1)
	for i := range muts {
		muts[i] = set("a", fmt.Sprintf("q%06d", i%1000), int64(i), "v")
	}
	err := tb.Apply(bg, []byte("wide"), muts)
	if !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), "split the row's mutations") {
		t.Fatalf("Apply of %d mutations: %v, want a limit error", len(muts), err)
	}
	if err := tb.Apply(bg, []byte("wide"), muts[:cell.MaxMutationsPerRow]); err != nil {
		t.Fatalf("Apply of %d mutations: %v", cell.MaxMutationsPerRow, err)
	}
	if got := len(strings.Fields(readRow(t, tb, "wide", nil))); got != cell.MaxMutationsPerRow {
		t.Fatalf("the wide row holds %d cells, want %d", got, cell.MaxMutationsPerRow)
	}
}

// A caller that gave up gets its context's error and nothing is applied.
func TestApplyWithAContextThatEndedAppliesNothing(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := tb.Apply(ctx, []byte("r"), []cell.Mutation{set("a", "q", 1, "v")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a cancelled context: %v", err)
	}
	if got := readRow(t, tb, "r", nil); got != "" {
		t.Fatalf("the row holds %q", got)
	}
}
