package export

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/tabuladb/tabula/families"
)

var sampleHeader = Header{
	Table: "users", AsOf: 1767225600000000, Start: []byte("a\xff"), End: []byte("z"),
	Families: []families.Family{
		{Name: "a", GCRule: families.UnionRule(families.MaxVersionsRule(3), families.IntersectionRule(families.MaxAgeRule(7*24*time.Hour), families.MaxVersionsRule(1))),
			Compression: families.CompressionZstd, Bloom: families.BloomRowColumn, BlockSize: 16 << 10, InMemory: true},
		{Name: "b.x-1", MaxVersions: 2, TTL: 90 * time.Minute, GC: families.GCIntersection, DeclaredType: "\x12\x00"},
		{Name: "sums", ValueType: families.Sum},
	},
	Splits:         [][]byte{[]byte("\x00"), []byte("m"), []byte("m\xff")},
	SplitThreshold: 1 << 30,
}

func TestHeaderRoundTrip(t *testing.T) {
	b, err := EncodeHeader(sampleHeader)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b, "\n") {
		t.Fatalf("header is not one line: %s", b)
	}
	got, err := DecodeHeader(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if !headersEqual(got, sampleHeader) {
		t.Errorf("decoded %+v\nwant    %+v", got, sampleHeader)
	}
	if !bytes.Contains(b, []byte(`"gc_rule":"union(versions=3,intersection(age=7d,versions=1))"`)) {
		t.Errorf("header lacks the GC rule in its spec form: %s", b)
	}
}

func headersEqual(a, b Header) bool {
	if len(a.Families) != len(b.Families) {
		return false
	}
	for i := range a.Families {
		if !a.Families[i].Equal(b.Families[i]) {
			return false
		}
	}
	a.Families, b.Families = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestDecodeHeaderErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"table":"t"}`, `no "tabula_export"`},
		{`{"tabula_export":2,"table":"t"}`, "format 2"},
		{`{"tabula_export":1,"as_of":-1}`, "negative"},
		{`{"tabula_export":1,"splits":["bQ==","YQ=="]}`, "increasing"},
		{`{"tabula_export":1,"splits":[""]}`, "split 0"},
		{`{"tabula_export":1,"families":[{"name":"a","compression":"lz4","bloom":"row","type":"bytes"}]}`, "lz4"},
		{`{"tabula_export":1,"families":[{"name":"a","compression":"none","bloom":"row","type":"bytes","gc_rule":"versions=0"}]}`, "family \"a\""},
		{`{"tabula_export":1,"families":[{"name":"a","compression":"none","bloom":"row","type":"bytes"},{"name":"a","compression":"none","bloom":"row","type":"bytes"}]}`, "twice"},
		{`{"tabula_export":1,"extra":1}`, "extra"},
		{`{"tabula_export":1} {}`, "text after"},
	} {
		_, err := DecodeHeader([]byte(tc.in))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("DecodeHeader(%s): %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

// FuzzHeader: no input panics, and whatever decodes encodes to a header
// that decodes to the same.
func FuzzHeader(f *testing.F) {
	b, err := EncodeHeader(sampleHeader)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"tabula_export":1,"table":"t","as_of":5,"families":[],"splits":[]}`))
	f.Add([]byte(`{"tabula_export":1,"families":[{"name":"a","compression":"SNAPPY","bloom":"row","type":"sum","ttl_micros":5}]}`))
	f.Add([]byte(`{"tabula_export":1,"families":[{"name":"a","gc":"intersection","gc_rule":"versions=1","compression":"none","bloom":"none","type":"bytes"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := DecodeHeader(in)
		if err != nil {
			return
		}
		b, err := EncodeHeader(h)
		if err != nil {
			t.Fatalf("decoded header %+v does not encode: %v", h, err)
		}
		again, err := DecodeHeader(b)
		if err != nil {
			t.Fatalf("re-encoded header %s does not decode: %v", b, err)
		}
		if !headersEqual(h, again) {
			t.Fatalf("round trip changed %+v to %+v", h, again)
		}
	})
}
