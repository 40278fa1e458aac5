package families

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec     string
		want     Family
		wantSpec string // canonical form; "" means spec itself
	}{
		{"cf", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow}, ""},
		{" cf: ", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow}, "cf"},
		{"cf:versions=3", Family{Name: "cf", MaxVersions: 3, Compression: CompressionSnappy, Bloom: BloomRow}, ""},
		{"cf:ttl=7d", Family{Name: "cf", TTL: 7 * day, Compression: CompressionSnappy, Bloom: BloomRow}, ""},
		{"cf:ttl=36h", Family{Name: "cf", TTL: 36 * time.Hour, Compression: CompressionSnappy, Bloom: BloomRow}, "cf:ttl=36h"},
		{"cf:ttl=48h", Family{Name: "cf", TTL: 48 * time.Hour, Compression: CompressionSnappy, Bloom: BloomRow}, "cf:ttl=2d"},
		{"cf:ttl=1500us", Family{Name: "cf", TTL: 1500 * time.Microsecond, Compression: CompressionSnappy, Bloom: BloomRow}, "cf:ttl=1500us"},
		{"cf:ttl=never", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow}, "cf"},
		{"cf:versions=1,ttl=1h,gc=intersection", Family{Name: "cf", MaxVersions: 1, TTL: time.Hour, GC: GCIntersection,
			Compression: CompressionSnappy, Bloom: BloomRow}, "cf:versions=1,ttl=1h,gc=intersection"},
		{"cf:compression=none,bloom=none", Family{Name: "cf"}, ""},
		{"cf:compression=zstd,bloom=row+column", Family{Name: "cf", Compression: CompressionZstd, Bloom: BloomRowColumn}, ""},
		{"cf:blocksize=64k", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, BlockSize: 64 << 10}, ""},
		{"cf:blocksize=2MiB", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, BlockSize: 2 << 20}, "cf:blocksize=2m"},
		{"cf:blocksize=1500", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, BlockSize: 1500}, ""},
		{"cf:inmemory=true", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, InMemory: true}, ""},
		{"cf:inmemory=false", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow}, "cf"},
		{"cf:type=sum", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, ValueType: Sum}, ""},
		{"cf:versions=1,type=MAX", Family{Name: "cf", MaxVersions: 1, Compression: CompressionSnappy, Bloom: BloomRow, ValueType: Max}, "cf:versions=1,type=max"},
		{"cf:type=min", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, ValueType: Min}, ""},
		{"cf:type=bytes", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow}, "cf"},
		{"cf: Versions = 2 , TTL=1d,", Family{Name: "cf", MaxVersions: 2, TTL: day, Compression: CompressionSnappy, Bloom: BloomRow}, "cf:versions=2,ttl=1d"},
		{"cf:gc=union(versions=3,intersection(age=7d,versions=1)),compression=zstd", Family{Name: "cf", Compression: CompressionZstd, Bloom: BloomRow,
			GCRule: UnionRule(MaxVersionsRule(3), IntersectionRule(MaxAgeRule(7*day), MaxVersionsRule(1)))}, ""},
		{"cf: GC = Intersection ( Age = 36h , union ( ) ) ", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow,
			GCRule: IntersectionRule(MaxAgeRule(36*time.Hour), UnionRule())}, "cf:gc=intersection(age=36h,union())"},
		{"cf:gc=versions=2", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, GCRule: MaxVersionsRule(2)}, ""},
		{"cf:gc=age=1500us", Family{Name: "cf", Compression: CompressionSnappy, Bloom: BloomRow, GCRule: MaxAgeRule(1500 * time.Microsecond)}, "cf:gc=age=1500us"},
		{"cf:bloom=none,gc=union(),inmemory=true", Family{Name: "cf", Compression: CompressionSnappy, GCRule: UnionRule(), InMemory: true}, "cf:gc=union(),bloom=none,inmemory=true"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := Parse(tc.spec)
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tc.spec, err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.spec, got, tc.want)
			}
			wantSpec := tc.wantSpec
			if wantSpec == "" {
				wantSpec = tc.spec
			}
			if s := got.Spec(); s != wantSpec {
				t.Errorf("Spec() = %q, want %q", s, wantSpec)
			}
			back, err := Parse(got.Spec())
			if err != nil || !back.Equal(got) {
				t.Errorf("Parse(Spec()) = %+v, %v; want %+v", back, err, got)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ spec, wantErr string }{
		{"", "family name"},
		{":versions=1", "family name"},
		{"bad name", "family name"},
		{"cf:color=red", `unknown option "color"; the options are versions, ttl, gc, compression, bloom, blocksize, inmemory, type`},
		{"cf:versions", "has no value"},
		{"cf:versions=x", "not a whole number"},
		{"cf:versions=-2", "negative"},
		{"cf:versions=1,versions=2", "given twice"},
		{"cf:ttl=forever", "not a duration"},
		{"cf:ttl=-1h", "negative"},
		{"cf:ttl=1ns", "microseconds"},
		{"cf:ttl=99999999999999d", "not a duration"},
		{"cf:gc=or", "not one of union, intersection"},
		{"cf:compression=lz4", "not one of none, snappy, zstd"},
		{"cf:bloom=yes", "not one of none, row, row+column"},
		{"cf:blocksize=10", "out of range"},
		{"cf:blocksize=5m", "out of range"},
		{"cf:blocksize=9999999999m", "not a size"},
		{"cf:blocksize=lots", "not a size"},
		{"cf:inmemory=maybe", "not true or false"},
		{"cf:gc=union(versions=3", "a '(' is not closed"},
		{"cf:gc=union(versions=3))", "')' has no matching '('"},
		{"cf:gc=union(ttl=1d)", `unknown rule "ttl=1d"`},
		{"cf:gc=union(versions=0)", "keep at least 1 version"},
		{"cf:gc=union(versions=x)", `versions="x" is not a whole number`},
		{"cf:gc=intersection(age=-1h)", "age must be positive"},
		{"cf:gc=intersection(age=soon)", "not a duration"},
		{"cf:gc=intersection(age=1ns)", "microseconds"},
		{"cf:gc=union(versions=1 age=1h)", `versions="1 age=1h" is not a whole number`},
		{"cf:gc=union(union() age=1h)", "expected ',' or ')'"},
		{"cf:gc=union(versions=1)age=1h", "unexpected"},
		{"cf:gc=both", "nor a nested rule"},
		{"cf:gc=intersection(age=1d),versions=2", "cannot be combined"},
		{"cf:ttl=1d,gc=union(versions=2)", "cannot be combined"},
		{"cf:gc=" + strings.Repeat("union(", 17) + strings.Repeat(")", 17), "deeper than 16"},
		{"cf:gc=union(" + strings.Repeat("versions=1,", 64) + ")", "more than 64"},
		{"cf:type=hll", "not one of bytes, sum, min, max (HyperLogLog aggregates are not supported)"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := Parse(tc.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", tc.spec, tc.wantErr)
			}
			if !errors.Is(err, cell.ErrInvalid) {
				t.Errorf("error %v does not wrap cell.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %q, want it to contain %q", tc.spec, err, tc.wantErr)
			}
			if strings.Count(err.Error(), cell.ErrInvalid.Error()) != 1 {
				t.Errorf("error %q repeats %q", err, cell.ErrInvalid)
			}
		})
	}
}

func TestApplyOptions(t *testing.T) {
	base := Family{Name: "cf", MaxVersions: 5, TTL: time.Hour, Compression: CompressionZstd, Bloom: BloomRow}
	got, err := ApplyOptions(base, "versions=3,ttl=24h")
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.MaxVersions, want.TTL = 3, 24*time.Hour
	if got != want {
		t.Fatalf("ApplyOptions = %+v, want %+v", got, want)
	}
	// Untouched options keep the family's values, not Parse's defaults.
	if got.Compression != CompressionZstd {
		t.Errorf("compression changed to %v", got.Compression)
	}
	got, err = ApplyOptions(base, "ttl=0,versions=0")
	if err != nil || got.TTL != 0 || got.MaxVersions != 0 {
		t.Errorf("clearing rules: %+v, %v", got, err)
	}
	// One form of GC policy replaces the other.
	got, err = ApplyOptions(base, "gc=union(versions=2,age=1h)")
	if err != nil || got.MaxVersions != 0 || got.TTL != 0 || got.GCRule.String() != "union(versions=2,age=1h)" {
		t.Errorf("nested over simple: %+v, %v", got, err)
	}
	got, err = ApplyOptions(got, "ttl=2h")
	if err != nil || got.GCRule != nil || got.TTL != 2*time.Hour || got.MaxVersions != 0 {
		t.Errorf("simple over nested: %+v, %v", got, err)
	}
	got, err = ApplyOptions(Family{Name: "cf", GCRule: MaxVersionsRule(1)}, "compression=zstd")
	if err != nil || got.GCRule.String() != "versions=1" {
		t.Errorf("other options keep the nested rule: %+v, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "versions=-1", "name=other", "gc=both", "gc=union(versions=1),ttl=1h"} {
		if _, err := ApplyOptions(base, bad); !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("ApplyOptions(%q) = %v, want cell.ErrInvalid", bad, err)
		}
	}
}

func TestApplyOptionsKeepsValueType(t *testing.T) {
	sum := Family{Name: "cf", ValueType: Sum}
	if got, err := ApplyOptions(sum, "versions=2,type=sum"); err != nil || got.ValueType != Sum || got.MaxVersions != 2 {
		t.Errorf("repeating the type: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		f    Family
		opts string
	}{{sum, "type=max"}, {sum, "type=bytes"}, {Family{Name: "cf"}, "type=sum"}} {
		_, err := ApplyOptions(tc.f, tc.opts)
		if !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), "fixed when the family is created") {
			t.Errorf("ApplyOptions(%v, %q) = %v, want the value type refused", tc.f.ValueType, tc.opts, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"cf", "cf:versions=3,ttl=7d", "cf:ttl=1.5ms,gc=intersection", "cf:compression=none,bloom=row+column",
		"cf:blocksize=64k,inmemory=true", "cf:type=sum", "cf:ttl=36h0m0s", "x:ttl=2562047h", "a:,,", "cf:versions=1,versions=1",
		"cf:gc=union(versions=3,intersection(age=7d,versions=1))", "cf:gc=intersection()", "cf:gc=age=1.5ms,bloom=none",
		"cf:gc=union(union(union(versions=1)),age=2562047h)", "cf:gc=union(versions=1,)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fam, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, cell.ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap cell.ErrInvalid", spec, err)
			}
			return
		}
		if err := fam.Validate(); err != nil {
			t.Fatalf("Parse(%q) returned an invalid family: %v", spec, err)
		}
		back, err := Parse(fam.Spec())
		if err != nil {
			t.Fatalf("Parse(%q).Spec() = %q does not parse: %v", spec, fam.Spec(), err)
		}
		if !back.Equal(fam) {
			t.Fatalf("round trip of %q via %q: %+v != %+v", spec, fam.Spec(), back, fam)
		}
	})
}

func FuzzParseGCRule(f *testing.F) {
	for _, s := range []string{
		"versions=3", "age=7d", "union()", "intersection()", "union(versions=3,intersection(age=7d,versions=1))",
		"INTERSECTION( union(age=1h, age = 2h), versions=2 )", "union(versions=1", "union(versions=1))", "age=never",
		"intersection(age=1h,union(age=2h,versions=1))", "union(x=1)", "versions=99999999999999999999",
	} {
		f.Add(s, int64(1_700_000_000_000_000))
	}
	f.Fuzz(func(t *testing.T, s string, now int64) {
		r, err := ParseGCRule(s)
		if err != nil {
			if !errors.Is(err, cell.ErrInvalid) {
				t.Fatalf("ParseGCRule(%q) error %v does not wrap cell.ErrInvalid", s, err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseGCRule(%q) returned an invalid rule: %v", s, err)
		}
		back, err := ParseGCRule(r.String())
		if err != nil || !back.Equal(r) {
			t.Fatalf("round trip of %q via %q: %v, %v", s, r.String(), back, err)
		}
		// The compiled policy agrees with the tree at the rule's own
		// boundaries (ages far from the int64 limits, where the reference's
		// plain subtraction is exact).
		if now < -1<<62 || now > 1<<62 {
			return
		}
		p := (&Family{Name: "cf", GCRule: r}).Policy(now)
		var ages []int64
		var walk func(*GCRule)
		walk = func(r *GCRule) {
			if r.Kind == RuleMaxAge && r.MaxAge.Microseconds() < 1<<61 {
				ages = append(ages, r.MaxAge.Microseconds())
			}
			for _, c := range r.Rules {
				walk(c)
			}
		}
		walk(r)
		for _, a := range ages {
			for _, ts := range []int64{now - a - 1, now - a, now} {
				for rank := range 5 {
					if got, want := p.Condemned(ts, rank), refCondemned(r, now, ts, rank); got != want {
						t.Fatalf("%s: Condemned(now%+d, %d) = %v, reference %v", r, ts-now, rank, got, want)
					}
				}
			}
		}
	})
}

// TestFormatDurationInvertsParse checks that a duration is printed in the
// unit a user types and that parsing the text gives the duration back.
func TestFormatDurationInvertsParse(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{30 * day, "30d"}, {36 * time.Hour, "36h"}, {48 * time.Hour, "2d"}, {90 * time.Minute, "90m"},
		{time.Hour, "1h"}, {45 * time.Second, "45s"}, {1500 * time.Millisecond, "1500ms"}, {7 * time.Microsecond, "7us"},
		{1500 * time.Nanosecond, "1.5µs"}, {0, "0s"}, {time.Duration(1<<63 - 1), "2562047h47m16.854775807s"},
	} {
		got := FormatDuration(c.d)
		if got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		if back, err := parseDuration(got); err != nil || back != c.d {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", got, back, err, c.d)
		}
	}
}
