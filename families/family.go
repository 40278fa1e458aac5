package families

import (
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// Block size limits for Family.BlockSize.
const (
	MinBlockSize = 1 << 10
	MaxBlockSize = 4 << 20
)

// Family is one column family's schema: its GC policy and the settings of
// its SSTables. The zero value of every field but Name is valid and means
// the default. Note that the CLI and the admin API give new families
// compression snappy and bloom row (see Default and Parse); the zero value
// here is "none" for both.
type Family struct {
	// Name is the family name, [A-Za-z0-9_.-]{1,64}.
	Name string
	// MaxVersions keeps the newest N versions of each column by timestamp;
	// 0 means no limit. The default is 0.
	MaxVersions int
	// TTL condemns cells whose timestamp is older than now - TTL; it must
	// be a whole number of microseconds. 0 means never. The default is 0.
	TTL time.Duration
	// GC says how MaxVersions and TTL combine when both are set. The
	// default is GCUnion.
	GC GCMode
	// GCRule, when not nil, is the family's GC policy as a nested rule
	// (Cloud Bigtable's GcRule), instead of MaxVersions, TTL and GC: those
	// are the simple form and must then be zero (GC union). The default is
	// nil: the simple form rules.
	GCRule *GCRule
	// Compression of SSTable blocks. The default is CompressionNone; the
	// CLI's default is CompressionSnappy.
	Compression Compression
	// Bloom says what SSTable bloom filters hold. The default is
	// BloomNone; the CLI's and admin API's default is BloomRow.
	Bloom Bloom
	// BlockSize is the SSTable data block size in bytes, MinBlockSize to
	// MaxBlockSize; 0 means the sstable package's default (8 KiB). The
	// default is 0.
	BlockSize int
	// InMemory hints that this family's blocks should be kept in the block
	// cache preferentially, like HBase's IN_MEMORY: the tablet server gives
	// them the cache's in-memory priority, so scans of other families do not
	// evict them, up to a quarter of the cache (see sstable.Cache). The
	// default is false.
	InMemory bool
	// ValueType says what the cells hold: plain bytes, or an int64
	// aggregate (sum, min, max) that AddToCell and MergeToCell merge into.
	// It is fixed at creation (see CheckModify). The default is Bytes.
	ValueType ValueType
	// DeclaredType is what a client declared a plain (Bytes) family's
	// values to be: the bytes of a serialized Cloud Bigtable Type (a
	// string, an int64...), kept for the Bigtable gateway, which reports
	// it. Nothing else reads it: the cells hold the bytes written, so it
	// may change at any time, and it is empty on aggregate families. A
	// string, not a slice, so that a Family stays a value. At most
	// MaxDeclaredTypeLen bytes.
	DeclaredType string
}

// MaxDeclaredTypeLen bounds Family.DeclaredType: every schema change
// sends the whole schema to etcd and to the tablet servers.
const MaxDeclaredTypeLen = 4 << 10

// Default returns a family with the CLI's and admin API's defaults:
// compression snappy, bloom row, no GC rule.
func Default(name string) Family {
	return Family{Name: name, Compression: CompressionSnappy, Bloom: BloomRow}
}

// Validate checks every field; errors wrap cell.ErrInvalid and say how to
// fix the field.
func (f *Family) Validate() error {
	if err := cell.ValidateFamilyName(f.Name); err != nil {
		return err
	}
	if f.MaxVersions < 0 {
		return cell.Invalidf("family %s: versions %d is negative; give 0 for no limit or N >= 1 to keep N versions", f.Name, f.MaxVersions)
	}
	if f.TTL < 0 {
		return cell.Invalidf("family %s: ttl %v is negative; give 0 for none or a positive duration", f.Name, f.TTL)
	}
	if !wholeMicros(f.TTL) {
		return cell.Invalidf("family %s: ttl %v is not a whole number of microseconds; timestamps are in microseconds", f.Name, f.TTL)
	}
	if f.GC > GCIntersection {
		return cell.Invalidf("family %s: unknown gc mode %d; use union or intersection", f.Name, f.GC)
	}
	if f.GCRule != nil {
		// The tree first: it bounds the tree, which printing it needs.
		if err := f.GCRule.Validate(); err != nil {
			return cell.Invalidf("family %s: %s", f.Name, strings.TrimPrefix(err.Error(), cell.ErrInvalid.Error()+": "))
		}
		if f.MaxVersions != 0 || f.TTL != 0 || f.GC != GCUnion {
			return cell.Invalidf("family %s: both a nested gc rule (%s) and versions/ttl/gc=intersection are set; use one: put every rule in the nested rule, or clear it", f.Name, f.GCRule)
		}
	}
	if f.Compression > CompressionZstd {
		return cell.Invalidf("family %s: unknown compression %d; use none, snappy or zstd", f.Name, f.Compression)
	}
	if f.Bloom > BloomRowColumn {
		return cell.Invalidf("family %s: unknown bloom %d; use none, row or row+column", f.Name, f.Bloom)
	}
	if f.ValueType > Max {
		return cell.Invalidf("family %s: unknown value type %d; use bytes, sum, min or max", f.Name, f.ValueType)
	}
	if f.DeclaredType != "" && f.ValueType != Bytes {
		return cell.Invalidf("family %s: a declared value type is for plain (bytes) families; a %s family's type is its aggregate", f.Name, f.ValueType)
	}
	if len(f.DeclaredType) > MaxDeclaredTypeLen {
		return cell.Invalidf("family %s: the declared value type is %d bytes, over the limit of %d", f.Name, len(f.DeclaredType), MaxDeclaredTypeLen)
	}
	if f.BlockSize != 0 && (f.BlockSize < MinBlockSize || f.BlockSize > MaxBlockSize) {
		return cell.Invalidf("family %s: block size %d is out of range; give 0 for the default or %d (1k) to %d (4m) bytes", f.Name, f.BlockSize, MinBlockSize, MaxBlockSize)
	}
	return nil
}
