package families

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		f       Family
		wantErr string // substring; "" means valid
	}{
		{"zero value with name", Family{Name: "cf"}, ""},
		{"everything set", Family{Name: "a_b.c-9", MaxVersions: 3, TTL: 24 * time.Hour, GC: GCIntersection,
			Compression: CompressionZstd, Bloom: BloomRowColumn, BlockSize: 64 << 10, InMemory: true}, ""},
		{"smallest block", Family{Name: "cf", BlockSize: MinBlockSize}, ""},
		{"largest block", Family{Name: "cf", BlockSize: MaxBlockSize}, ""},
		{"ttl of one microsecond", Family{Name: "cf", TTL: time.Microsecond}, ""},
		{"empty name", Family{}, "family name"},
		{"name with colon", Family{Name: "a:b"}, "family name"},
		{"name too long", Family{Name: strings.Repeat("x", 65)}, "family name"},
		{"negative versions", Family{Name: "cf", MaxVersions: -1}, "versions -1 is negative"},
		{"negative ttl", Family{Name: "cf", TTL: -time.Second}, "ttl -1s is negative"},
		{"ttl in nanoseconds", Family{Name: "cf", TTL: 1500 * time.Nanosecond}, "whole number of microseconds"},
		{"unknown gc", Family{Name: "cf", GC: 2}, "unknown gc mode"},
		{"unknown compression", Family{Name: "cf", Compression: 3}, "unknown compression"},
		{"unknown bloom", Family{Name: "cf", Bloom: 3}, "unknown bloom"},
		{"block too small", Family{Name: "cf", BlockSize: MinBlockSize - 1}, "block size 1023 is out of range"},
		{"block too large", Family{Name: "cf", BlockSize: MaxBlockSize + 1}, "out of range"},
		{"negative block", Family{Name: "cf", BlockSize: -1}, "out of range"},
		{"sum family", Family{Name: "cf", ValueType: Sum}, ""},
		{"max family", Family{Name: "cf", ValueType: Max}, ""},
		{"unknown value type", Family{Name: "cf", ValueType: Max + 1}, "unknown value type 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tc.wantErr)
			}
			if !errors.Is(err, cell.ErrInvalid) {
				t.Errorf("Validate() = %v, does not wrap cell.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	f := Default("cf")
	want := Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow}
	if f != want {
		t.Fatalf("Default = %+v, want %+v", f, want)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseGCMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want GCMode
		ok   bool
	}{{"union", GCUnion, true}, {"INTERSECTION", GCIntersection, true}, {"", 0, false}, {"and", 0, false}} {
		got, err := ParseGCMode(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseGCMode(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("ParseGCMode(%q) error %v does not wrap cell.ErrInvalid", tc.in, err)
		}
		if tc.ok && got.String() != strings.ToLower(tc.in) {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

func TestValueTypeMerge(t *testing.T) {
	const big = int64(1<<63 - 1)
	tests := []struct {
		vt         ValueType
		a, b, want int64
	}{
		{Sum, 3, 4, 7}, {Sum, -3, 1, -2}, {Sum, big, 1, -big - 1}, // wraps
		{Min, 3, -4, -4}, {Min, 5, 9, 5},
		{Max, 3, -4, 3}, {Max, 5, 9, 9},
	}
	for _, tc := range tests {
		if got := tc.vt.Merge(tc.a, tc.b); got != tc.want {
			t.Errorf("%v.Merge(%d, %d) = %d, want %d", tc.vt, tc.a, tc.b, got, tc.want)
		}
	}
	if n, ok := DecodeAggregate(EncodeAggregate(-5)); !ok || n != -5 {
		t.Errorf("DecodeAggregate(EncodeAggregate(-5)) = %d, %v", n, ok)
	}
	if _, ok := DecodeAggregate([]byte{1, 2, 3}); ok {
		t.Error("DecodeAggregate of 3 bytes succeeded")
	}
	if Bytes.IsAggregate() || !Sum.IsAggregate() || !Min.IsAggregate() || !Max.IsAggregate() {
		t.Error("IsAggregate is wrong")
	}
}
