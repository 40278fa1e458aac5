package convert

import (
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// MutationsFromProto converts a request's mutations. A nil mutation or one
// whose oneof is unset is an error wrapping cell.ErrInvalid naming its
// index. Field limits are left to cell.ValidateMutations.
func MutationsFromProto(ms []*tabulapb.Mutation) ([]cell.Mutation, error) {
	out := make([]cell.Mutation, 0, len(ms))
	for i, m := range ms {
		c, err := MutationFromProto(m)
		if err != nil {
			return nil, cell.Invalidf("mutations[%d]: %v", i, trimInvalid(err))
		}
		out = append(out, c)
	}
	return out, nil
}

// MutationFromProto converts one mutation.
func MutationFromProto(m *tabulapb.Mutation) (cell.Mutation, error) {
	switch x := m.GetMutation().(type) {
	case *tabulapb.Mutation_SetCell_:
		s := x.SetCell
		if s == nil {
			return cell.Mutation{}, cell.Invalidf("set_cell is nil")
		}
		return cell.Mutation{Kind: cell.SetCell, Family: s.GetFamily(), Qualifier: s.GetQualifier(),
			Timestamp: s.GetTimestampMicros(), Value: s.GetValue()}, nil
	case *tabulapb.Mutation_DeleteFromColumn_:
		d := x.DeleteFromColumn
		if d == nil {
			return cell.Mutation{}, cell.Invalidf("delete_from_column is nil")
		}
		return cell.Mutation{Kind: cell.DeleteColumn, Family: d.GetFamily(), Qualifier: d.GetQualifier(),
			TimeStart: d.GetStartTimestampMicros(), TimeEnd: d.GetEndTimestampMicros()}, nil
	case *tabulapb.Mutation_DeleteFromFamily_:
		if x.DeleteFromFamily == nil {
			return cell.Mutation{}, cell.Invalidf("delete_from_family is nil")
		}
		return cell.Mutation{Kind: cell.DeleteFamily, Family: x.DeleteFromFamily.GetFamily()}, nil
	case *tabulapb.Mutation_DeleteFromRow_:
		return cell.Mutation{Kind: cell.DeleteRow}, nil
	case *tabulapb.Mutation_AddToCell_:
		a := x.AddToCell
		if a == nil {
			return cell.Mutation{}, cell.Invalidf("add_to_cell is nil")
		}
		return cell.Mutation{Kind: cell.AddToCell, Family: a.GetFamily(), Qualifier: a.GetQualifier(),
			Timestamp: a.GetTimestampMicros(), Value: cell.AggregateInput(a.GetInput())}, nil
	case *tabulapb.Mutation_MergeToCell_:
		a := x.MergeToCell
		if a == nil {
			return cell.Mutation{}, cell.Invalidf("merge_to_cell is nil")
		}
		return cell.Mutation{Kind: cell.MergeToCell, Family: a.GetFamily(), Qualifier: a.GetQualifier(),
			Timestamp: a.GetTimestampMicros(), Value: a.GetInput()}, nil
	}
	return cell.Mutation{}, cell.Invalidf("mutation has no kind; set one of set_cell, delete_from_column, delete_from_family, delete_from_row, add_to_cell, merge_to_cell")
}

// MutationsToProto converts mutations for a request. A mutation of an
// unknown kind, or an AddToCell whose Value is not the 8 bytes of an int64
// (cell.Mutation.Validate refuses both), becomes a Mutation with no kind,
// which the server rejects.
func MutationsToProto(ms []cell.Mutation) []*tabulapb.Mutation {
	out := make([]*tabulapb.Mutation, len(ms))
	for i := range ms {
		out[i] = MutationToProto(&ms[i])
	}
	return out
}

// MutationToProto converts one mutation.
func MutationToProto(m *cell.Mutation) *tabulapb.Mutation {
	switch m.Kind {
	case cell.SetCell:
		return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_SetCell_{SetCell: &tabulapb.Mutation_SetCell{
			Family: m.Family, Qualifier: m.Qualifier, TimestampMicros: m.Timestamp, Value: m.Value}}}
	case cell.DeleteColumn:
		return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_DeleteFromColumn_{DeleteFromColumn: &tabulapb.Mutation_DeleteFromColumn{
			Family: m.Family, Qualifier: m.Qualifier, StartTimestampMicros: m.TimeStart, EndTimestampMicros: m.TimeEnd}}}
	case cell.DeleteFamily:
		return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_DeleteFromFamily_{DeleteFromFamily: &tabulapb.Mutation_DeleteFromFamily{
			Family: m.Family}}}
	case cell.DeleteRow:
		return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_DeleteFromRow_{DeleteFromRow: &tabulapb.Mutation_DeleteFromRow{}}}
	case cell.AddToCell:
		n, ok := families.DecodeAggregate(m.Value)
		if !ok {
			break
		}
		return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_AddToCell_{AddToCell: &tabulapb.Mutation_AddToCell{
			Family: m.Family, Qualifier: m.Qualifier, TimestampMicros: m.Timestamp, Input: n}}}
	case cell.MergeToCell:
		return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_MergeToCell_{MergeToCell: &tabulapb.Mutation_MergeToCell{
			Family: m.Family, Qualifier: m.Qualifier, TimestampMicros: m.Timestamp, Input: m.Value}}}
	}
	return &tabulapb.Mutation{}
}

// RulesFromProto converts a ReadModifyWriteRow request's rules.
func RulesFromProto(rs []*tabulapb.ReadModifyWriteRule) ([]cell.ReadModifyWriteRule, error) {
	out := make([]cell.ReadModifyWriteRule, 0, len(rs))
	for i, r := range rs {
		c := cell.ReadModifyWriteRule{Family: r.GetFamily(), Qualifier: r.GetQualifier()}
		switch x := r.GetRule().(type) {
		case *tabulapb.ReadModifyWriteRule_AppendValue:
			c.Kind, c.AppendValue = cell.Append, x.AppendValue
		case *tabulapb.ReadModifyWriteRule_IncrementAmount:
			c.Kind, c.IncrementAmount = cell.Increment, x.IncrementAmount
		default:
			return nil, cell.Invalidf("rules[%d]: rule has no kind; set append_value or increment_amount", i)
		}
		out = append(out, c)
	}
	return out, nil
}

// RulesToProto converts read-modify-write rules for a request. A rule of an
// unknown kind becomes one with no kind, which the server rejects.
func RulesToProto(rs []cell.ReadModifyWriteRule) []*tabulapb.ReadModifyWriteRule {
	out := make([]*tabulapb.ReadModifyWriteRule, len(rs))
	for i, r := range rs {
		p := &tabulapb.ReadModifyWriteRule{Family: r.Family, Qualifier: r.Qualifier}
		switch r.Kind {
		case cell.Append:
			v := r.AppendValue
			if v == nil {
				v = []byte{}
			}
			p.Rule = &tabulapb.ReadModifyWriteRule_AppendValue{AppendValue: v}
		case cell.Increment:
			p.Rule = &tabulapb.ReadModifyWriteRule_IncrementAmount{IncrementAmount: r.IncrementAmount}
		}
		out[i] = p
	}
	return out
}
