package cell

import (
	"bytes"
	"math/rand"
	"sort"
	"testing"
)

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, r.Intn(n+1))
	for i := range b {
		b[i] = []byte{0, 1, 0xFF, 'a', 'b'}[r.Intn(5)]
	}
	return b
}

// compareKeys is the reference order the encoding must reproduce.
func compareKeys(a, b Key) int {
	if c := bytes.Compare(a.Row, b.Row); c != 0 {
		return c
	}
	ca, cb := a.Kind == KindDeleteFamily, b.Kind == KindDeleteFamily
	if ca != cb {
		if ca {
			return -1
		}
		return 1
	}
	if !ca {
		if c := bytes.Compare(a.Qualifier, b.Qualifier); c != 0 {
			return c
		}
		if a.Kind != b.Kind {
			if a.Kind == KindDeleteColumn {
				return -1
			}
			return 1
		}
	}
	if a.Timestamp != b.Timestamp {
		if a.Timestamp > b.Timestamp {
			return -1
		}
		return 1
	}
	if a.Seq != b.Seq {
		if a.Seq > b.Seq {
			return -1
		}
		return 1
	}
	return 0
}

func TestKeyEncodingOrderMatchesModel(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	var keys []Key
	for i := 0; i < 3000; i++ {
		k := Key{Row: randBytes(r, 4), Seq: uint64(r.Intn(4)), Kind: Kind(1 + r.Intn(3))}
		if len(k.Row) == 0 {
			k.Row = []byte{'r'}
		}
		if k.Kind != KindDeleteFamily {
			k.Qualifier = randBytes(r, 3)
		}
		if k.Kind == KindSet {
			k.Timestamp = int64(r.Intn(4))
		}
		keys = append(keys, k)
	}
	enc := make([][]byte, len(keys))
	for i, k := range keys {
		enc[i] = AppendKey(nil, k)
		got, err := DecodeKey(enc[i])
		if err != nil {
			t.Fatalf("decode %x: %v", enc[i], err)
		}
		if compareKeys(got, k) != 0 || got.Kind != k.Kind {
			t.Fatalf("round trip %+v -> %+v", k, got)
		}
		rp, err := RowPrefix(enc[i])
		if err != nil || !bytes.Equal(rp, EncodeRow(k.Row)) {
			t.Fatalf("row prefix of %+v = %x, %v", k, rp, err)
		}
		if k.Kind != KindDeleteFamily {
			cp, ok, err := ColumnPrefix(enc[i])
			if err != nil || !ok || !bytes.Equal(cp, EncodeColumn(k.Row, k.Qualifier)) {
				t.Fatalf("column prefix of %+v = %x, %v, %v", k, cp, ok, err)
			}
		}
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return bytes.Compare(enc[idx[a]], enc[idx[b]]) < 0 })
	for i := 1; i < len(idx); i++ {
		if compareKeys(keys[idx[i-1]], keys[idx[i]]) > 0 {
			t.Fatalf("encoded order disagrees: %+v sorts before %+v", keys[idx[i-1]], keys[idx[i]])
		}
		// A row's keys stay inside [EncodeRow(row), EncodeRow(next row)).
		if !bytes.HasPrefix(enc[idx[i]], EncodeRow(keys[idx[i]].Row)) {
			t.Fatalf("key %x lacks its row prefix", enc[idx[i]])
		}
	}
}

func TestDecodeKeyRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {0}, {'a', 0, 2}, {'a', 0, 1}, {'a', 0, 1, 3}, {'a', 0, 1, 1, 0}} {
		if _, err := DecodeKey(b); err == nil {
			t.Errorf("DecodeKey(%x) succeeded", b)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	f.Add(AppendKey(nil, Key{Row: []byte("r\x00w"), Qualifier: []byte("q"), Timestamp: 5, Seq: 9, Kind: KindSet}))
	f.Add(AppendKey(nil, Key{Row: []byte("r"), Seq: 1, Kind: KindDeleteFamily}))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		if err != nil {
			return
		}
		if re := AppendKey(nil, k); !bytes.Equal(re, b) {
			t.Fatalf("re-encoding %+v gives %x, not %x", k, re, b)
		}
	})
}

func TestMutationValidation(t *testing.T) {
	cases := []struct {
		name string
		m    Mutation
		ok   bool
	}{
		{"set", Mutation{Kind: SetCell, Family: "cf", Qualifier: []byte("q"), Timestamp: 1}, true},
		{"server time", Mutation{Kind: SetCell, Family: "cf", Timestamp: ServerTimestamp}, true},
		{"negative time", Mutation{Kind: SetCell, Family: "cf", Timestamp: -5}, false},
		{"bad family", Mutation{Kind: SetCell, Family: "c f"}, false},
		{"big qualifier", Mutation{Kind: SetCell, Family: "cf", Qualifier: make([]byte, MaxQualifierLen+1)}, false},
		{"big value", Mutation{Kind: SetCell, Family: "cf", Value: make([]byte, MaxValueLen+1)}, false},
		{"empty range", Mutation{Kind: DeleteColumn, Family: "cf", TimeStart: 5, TimeEnd: 5}, false},
		{"open range", Mutation{Kind: DeleteColumn, Family: "cf", TimeStart: 5}, true},
		{"row", Mutation{Kind: DeleteRow}, true},
		{"unknown", Mutation{Kind: 9, Family: "cf"}, false},
		{"add", Mutation{Kind: AddToCell, Family: "cf", Qualifier: []byte("q"), Timestamp: 0, Value: AggregateInput(-3)}, true},
		{"merge", Mutation{Kind: MergeToCell, Family: "cf", Timestamp: 7, Value: AggregateInput(3)}, true},
		{"add at server time", Mutation{Kind: AddToCell, Family: "cf", Timestamp: ServerTimestamp, Value: AggregateInput(1)}, false},
		{"add of 4 bytes", Mutation{Kind: AddToCell, Family: "cf", Value: []byte{0, 0, 0, 1}}, false},
		{"merge of no bytes", Mutation{Kind: MergeToCell, Family: "cf"}, false},
		{"add to bad family", Mutation{Kind: AddToCell, Family: "c f", Value: AggregateInput(1)}, false},
		{"add with big qualifier", Mutation{Kind: AddToCell, Family: "cf", Qualifier: make([]byte, MaxQualifierLen+1), Value: AggregateInput(1)}, false},
	}
	for _, c := range cases {
		err := c.m.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if err := ValidateMutations(nil, []Mutation{{Kind: DeleteRow}}); err == nil {
		t.Error("empty row key accepted")
	}
	if err := ValidateMutations(make([]byte, MaxRowKeyLen+1), []Mutation{{Kind: DeleteRow}}); err == nil {
		t.Error("oversized row key accepted")
	}
}

func TestIdempotent(t *testing.T) {
	cases := []struct {
		name string
		muts []Mutation
		want bool
	}{
		{"set", []Mutation{{Kind: SetCell, Timestamp: 5}}, true},
		{"deletes", []Mutation{{Kind: DeleteColumn}, {Kind: DeleteFamily}, {Kind: DeleteRow}}, true},
		{"server time", []Mutation{{Kind: SetCell, Timestamp: 5}, {Kind: SetCell, Timestamp: ServerTimestamp}}, false},
		{"add", []Mutation{{Kind: SetCell, Timestamp: 5}, {Kind: AddToCell, Timestamp: 5}}, false},
		{"merge", []Mutation{{Kind: MergeToCell, Timestamp: 5}}, false},
	}
	for _, c := range cases {
		if got := Idempotent(c.muts); got != c.want {
			t.Errorf("%s: Idempotent = %v, want %v", c.name, got, c.want)
		}
	}
}
