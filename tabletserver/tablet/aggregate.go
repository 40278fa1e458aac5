package tablet

import (
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// Aggregate families (families.Sum, Min, Max) store each AddToCell and
// MergeToCell as an ordinary cell entry (cell.KindSet) whose value is the
// 8-byte big-endian input, so the commit log record, the memtable and the
// SSTable formats are those of every other write: the family's value type,
// fixed when the family is created, is what says that the entries of one
// (row, column, timestamp) merge instead of the newest replacing the rest.
// Reads merge them (assembleAggregates); flushes and compactions write the
// merged cell, so storage does not grow with the number of increments.

// checkValueType refuses a mutation that does not fit its family's value
// type: SetCell into an aggregate family, AddToCell and MergeToCell into a
// bytes family.
func checkValueType(fam *families.Family, k cell.MutationKind) error {
	switch k {
	case cell.SetCell:
		if fam.ValueType.IsAggregate() {
			return cell.Invalidf("family %s is an aggregate (%v) family: write it with AddToCell or MergeToCell, not SetCell", fam.Name, fam.ValueType)
		}
	case cell.AddToCell, cell.MergeToCell:
		if !fam.ValueType.IsAggregate() {
			return cell.Invalidf("family %s holds bytes: %v needs an aggregate family (created with type sum, min or max); write it with SetCell", fam.Name, k)
		}
	}
	return nil
}

// hasAggregates reports whether muts hold an AddToCell or MergeToCell.
func hasAggregates(muts []cell.Mutation) bool {
	for i := range muts {
		if k := muts[i].Kind; k == cell.AddToCell || k == cell.MergeToCell {
			return true
		}
	}
	return false
}

// combineAggregates returns muts with the aggregate inputs of one request
// to the same (family, column, timestamp) combined. All entries of a batch
// share one sequence number, so two entries of one cell would have the same
// key and the memtable would keep only one: they must become one entry
// first. An input joins the open input of its cell: the first one written
// since the cell was last deleted in this request (by a column delete
// covering its timestamp, a family delete or a row delete), whose value
// becomes the aggregate, in its place. A delete closes the open inputs it
// covers, so that normalize then removes them (it sees each cell's inputs
// as one SetCell-like entry) and later inputs start a new one. muts is not
// modified; validated mutations (8-byte inputs) of a validated schema
// expected.
func combineAggregates(muts []cell.Mutation, sch *schema) []cell.Mutation {
	type colKey struct{ family, qualifier string }
	out := make([]cell.Mutation, 0, len(muts))
	open := map[colKey]map[int64]int{} // column → timestamp → index in out
	for i := range muts {
		m := muts[i]
		switch m.Kind {
		case cell.AddToCell, cell.MergeToCell:
			k := colKey{m.Family, string(m.Qualifier)}
			if at, ok := open[k][m.Timestamp]; ok {
				vt := sch.byName[m.Family].ValueType
				a, _ := families.DecodeAggregate(out[at].Value)
				b, _ := families.DecodeAggregate(m.Value)
				out[at].Value = families.EncodeAggregate(vt.Merge(a, b))
				continue
			}
			if open[k] == nil {
				open[k] = map[int64]int{}
			}
			open[k][m.Timestamp] = len(out)
		case cell.DeleteColumn:
			k := colKey{m.Family, string(m.Qualifier)}
			if m.TimeStart == 0 && m.TimeEnd == 0 {
				delete(open, k)
				break
			}
			for ts := range open[k] {
				if cell.DeleteRangeCovers(m.TimeStart, m.TimeEnd, ts) {
					delete(open[k], ts)
				}
			}
		case cell.DeleteFamily:
			for k := range open {
				if k.family == m.Family {
					delete(open, k)
				}
			}
		case cell.DeleteRow:
			clear(open)
		}
		out = append(out, m)
	}
	return out
}
