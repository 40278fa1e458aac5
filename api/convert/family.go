package convert

import (
	"math"
	"strings"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// maxTTLMicros is the largest TTL in microseconds a time.Duration holds.
const maxTTLMicros = math.MaxInt64 / int64(time.Microsecond)

// FamilyFromProto converts a family and validates it (families.Family
// Validate); errors wrap cell.ErrInvalid.
func FamilyFromProto(p *tabulapb.Family) (families.Family, error) {
	if p == nil {
		return families.Family{}, cell.Invalidf("family is missing")
	}
	if p.GetTtlMicros() < 0 || p.GetTtlMicros() > maxTTLMicros {
		return families.Family{}, cell.Invalidf("family %s: ttl_micros %d is out of range 0..%d", p.GetName(), p.GetTtlMicros(), maxTTLMicros)
	}
	if p.GetMaxVersions() < 0 {
		return families.Family{}, cell.Invalidf("family %s: max_versions %d is negative; give 0 for no limit", p.GetName(), p.GetMaxVersions())
	}
	if p.GetBlockSize() < 0 {
		return families.Family{}, cell.Invalidf("family %s: block_size %d is negative; give 0 for the default", p.GetName(), p.GetBlockSize())
	}
	if p.GetGc() < 0 || p.GetGc() > math.MaxUint8 || p.GetCompression() < 0 || p.GetCompression() > math.MaxUint8 ||
		p.GetBloom() < 0 || p.GetBloom() > math.MaxUint8 || p.GetValueType() < 0 || p.GetValueType() > math.MaxUint8 {
		return families.Family{}, cell.Invalidf("family %s: unknown gc, compression, bloom or value type enum value", p.GetName())
	}
	rule, err := GCRuleFromProto(p.GetGcRule())
	if err != nil {
		return families.Family{}, cell.Invalidf("family %s: %s", p.GetName(), strings.TrimPrefix(err.Error(), cell.ErrInvalid.Error()+": "))
	}
	f := families.Family{
		Name:        p.GetName(),
		MaxVersions: int(p.GetMaxVersions()),
		TTL:         time.Duration(p.GetTtlMicros()) * time.Microsecond,
		GC:          families.GCMode(p.GetGc()),
		Compression: families.Compression(p.GetCompression()),
		Bloom:       families.Bloom(p.GetBloom()),
		BlockSize:   int(p.GetBlockSize()),
		InMemory:    p.GetInMemory(),
		GCRule:      rule,
		ValueType:   families.ValueType(p.GetValueType()),

		DeclaredType: string(p.GetDeclaredType()),
	}
	if err := f.Validate(); err != nil {
		return families.Family{}, err
	}
	return f, nil
}

// FamilyToProto converts a family. A TTL is rounded down to whole
// microseconds and MaxVersions and BlockSize saturate at the int32 limit
// (Validate rejects what would need either).
func FamilyToProto(f families.Family) *tabulapb.Family {
	return &tabulapb.Family{
		Name:        f.Name,
		MaxVersions: saturate32(f.MaxVersions),
		TtlMicros:   f.TTL.Microseconds(),
		Gc:          tabulapb.GCMode(f.GC),
		Compression: tabulapb.Compression(f.Compression),
		Bloom:       tabulapb.Bloom(f.Bloom),
		BlockSize:   saturate32(f.BlockSize),
		InMemory:    f.InMemory,
		GcRule:      GCRuleToProto(f.GCRule),
		ValueType:   tabulapb.ValueType(f.ValueType),

		DeclaredType: []byte(f.DeclaredType),
	}
}

// FamiliesFromProto converts a schema's families; a duplicate name is an
// error.
func FamiliesFromProto(ps []*tabulapb.Family) ([]families.Family, error) {
	out := make([]families.Family, 0, len(ps))
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		f, err := FamilyFromProto(p)
		if err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, cell.Invalidf("family %s is given twice", f.Name)
		}
		seen[f.Name] = true
		out = append(out, f)
	}
	return out, nil
}

// FamiliesToProto converts families for a schema.
func FamiliesToProto(fs []families.Family) []*tabulapb.Family {
	out := make([]*tabulapb.Family, len(fs))
	for i, f := range fs {
		out[i] = FamilyToProto(f)
	}
	return out
}

func saturate32(n int) int32 {
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return int32(n)
}
