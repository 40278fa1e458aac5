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
