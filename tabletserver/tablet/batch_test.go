package tablet

import (
	"bytes"
	"errors"
	"reflect"
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
