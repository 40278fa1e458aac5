package families

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tabuladb/tabula/cell"
)

// ValueType says what a family's cells hold, as Cloud Bigtable's family
// value types do. It is fixed when the family is created (ModifyFamily
// refuses to change it, see CheckModify): the engine reads the cells
// already written through it.
//
// Bigtable's HyperLogLog aggregate (Type.Aggregate.HllppUniqueCount) is not
// supported.
type ValueType uint8

const (
	// Bytes is a plain family: cells hold any bytes, a write of the same
	// (row, column, timestamp) replaces the value, and only SetCell (and
	// ReadModifyWrite) write into it. The default.
	Bytes ValueType = iota
	// Sum is an aggregate family of int64 sums: AddToCell and MergeToCell
	// add their input to the cell at (row, column, timestamp), wrapping in
	// two's complement.
	Sum
	// Min is an aggregate family keeping the smallest int64 written to each
	// (row, column, timestamp).
	Min
	// Max is an aggregate family keeping the largest int64 written to each
	// (row, column, timestamp).
	Max
)

var valueTypeNames = []string{"bytes", "sum", "min", "max"}

func (v ValueType) String() string {
	if int(v) < len(valueTypeNames) {
		return valueTypeNames[v]
	}
	return fmt.Sprintf("valuetype(%d)", uint8(v))
}

// ParseValueType parses "bytes", "sum", "min" or "max".
func ParseValueType(s string) (ValueType, error) {
	for i, n := range valueTypeNames {
		if strings.EqualFold(s, n) {
			return ValueType(i), nil
		}
	}
	return 0, cell.Invalidf("value type %q is not one of bytes, sum, min, max (HyperLogLog aggregates are not supported)", s)
}

// IsAggregate reports whether cells of the type merge instead of replacing
// each other: every type but Bytes.
func (v ValueType) IsAggregate() bool { return v != Bytes }

// AggregateLen is the length of an aggregate cell's value and of every
// input of AddToCell and MergeToCell: an 8-byte big-endian int64.
const AggregateLen = 8

// Merge returns the aggregate of two int64 values of the type (sum, min or
// max). It must not be called for Bytes.
func (v ValueType) Merge(a, b int64) int64 {
	switch v {
	case Sum:
		return a + b // wraps, like ReadModifyWrite's increment
	case Min:
		return min(a, b)
	case Max:
		return max(a, b)
	}
	panic(fmt.Sprintf("families: Merge of value type %v", v))
}

// DecodeAggregate reads an aggregate value or input: an 8-byte big-endian
// int64. ok is false for any other length.
func DecodeAggregate(b []byte) (n int64, ok bool) {
	if len(b) != AggregateLen {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// EncodeAggregate returns the 8-byte big-endian form of n.
func EncodeAggregate(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// CheckModify checks that a family may be changed from old to new: the
// name and the value type are fixed at creation (the cells already written
// are read through the type). Errors wrap cell.ErrInvalid.
func CheckModify(old, new Family) error {
	if old.Name != new.Name {
		return cell.Invalidf("family %s cannot be renamed to %s", old.Name, new.Name)
	}
	if old.ValueType != new.ValueType {
		return cell.Invalidf("family %s: the value type is fixed when the family is created (it is %v, not %v); create a new family for another type", old.Name, old.ValueType, new.ValueType)
	}
	return nil
}
