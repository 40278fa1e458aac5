package master

import (
	"bytes"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// MaxSplitKeys bounds CreateTable's split keys: the table and all its
// tablets are written in one etcd transaction, and etcd allows 128
// operations per transaction by default.
const MaxSplitKeys = 126

// checkSchema validates a new table's schema and returns the canonical
// copy to store: families converted through families.Family (sorted by
// name), state "enabled".
func checkSchema(s *tabulapb.TableSchema) (*tabulapb.TableSchema, error) {
	if s == nil {
		return nil, cell.Invalidf("schema is missing")
	}
	if err := cell.ValidateTableName(s.GetName()); err != nil {
		return nil, err
	}
	if s.GetSplitThresholdBytes() < 0 {
		return nil, cell.Invalidf("schema.split_threshold_bytes %d is negative; give 0 for the cluster default", s.GetSplitThresholdBytes())
	}
	if st := s.GetState(); st != "" && st != meta.TableEnabled {
		return nil, cell.Invalidf("schema.state %q: a new table's state must be empty or %q", st, meta.TableEnabled)
	}
	fams, err := convert.FamiliesFromProto(s.GetFamilies())
	if err != nil {
		return nil, err
	}
	out := &tabulapb.TableSchema{
		Name:                s.GetName(),
		Families:            convert.FamiliesToProto(fams),
		SplitThresholdBytes: s.GetSplitThresholdBytes(),
		State:               meta.TableEnabled,
	}
	sortFamilies(out)
	return out, nil
}

// checkFamily validates one family and returns its canonical form.
func checkFamily(p *tabulapb.Family) (*tabulapb.Family, error) {
	f, err := convert.FamilyFromProto(p)
	if err != nil {
		return nil, err
	}
	return convert.FamilyToProto(f), nil
}

// checkSplitKeys checks that split keys are valid row keys, strictly
// ascending, and not too many.
func checkSplitKeys(keys [][]byte) error {
	if len(keys) > MaxSplitKeys {
		return cell.Invalidf("split_keys: %d keys; at most %d are allowed at creation (split further with SplitTablet)", len(keys), MaxSplitKeys)
	}
	for i, k := range keys {
		if err := cell.ValidateRow(k); err != nil {
			return cell.Invalidf("split_keys[%d]: %v", i, err)
		}
		if i > 0 && bytes.Compare(keys[i-1], k) >= 0 {
			return cell.Invalidf("split_keys[%d] %q is not greater than split_keys[%d] %q; split keys must be sorted and unique", i, k, i-1, keys[i-1])
		}
	}
	return nil
}

func sortFamilies(s *tabulapb.TableSchema) {
	sort.Slice(s.Families, func(i, j int) bool { return s.Families[i].GetName() < s.Families[j].GetName() })
}

func familyIndex(s *tabulapb.TableSchema, name string) int {
	for i, f := range s.GetFamilies() {
		if f.GetName() == name {
			return i
		}
	}
	return -1
}

func cloneSchema(s *tabulapb.TableSchema) *tabulapb.TableSchema {
	return proto.Clone(s).(*tabulapb.TableSchema)
}
