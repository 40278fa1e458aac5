package client

import (
	"bytes"
	"context"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/locator"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Mutation is a list of changes to one row, applied atomically. Build one
// with NewMutation and its chained methods.
type Mutation struct {
	ops []cell.Mutation
}

// NewMutation returns an empty mutation.
func NewMutation() *Mutation { return &Mutation{} }

// Set writes value at family:qualifier with timestamp ts in microseconds,
// or the server's clock when ts is ServerTime.
func (m *Mutation) Set(family string, qualifier []byte, ts int64, value []byte) *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.SetCell, Family: family, Qualifier: qualifier, Timestamp: ts, Value: value})
	return m
}

// DeleteColumn deletes every version of family:qualifier written before.
func (m *Mutation) DeleteColumn(family string, qualifier []byte) *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.DeleteColumn, Family: family, Qualifier: qualifier})
	return m
}

// DeleteColumnRange deletes the versions of family:qualifier with a
// timestamp in [start, end) written before; end 0 means no upper bound
// (the only way to reach a cell at timestamp MaxInt64, since end is
// exclusive).
func (m *Mutation) DeleteColumnRange(family string, qualifier []byte, start, end int64) *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.DeleteColumn, Family: family, Qualifier: qualifier, TimeStart: start, TimeEnd: end})
	return m
}

// DeleteFamily deletes every cell of family in the row written before.
func (m *Mutation) DeleteFamily(family string) *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.DeleteFamily, Family: family})
	return m
}

// DeleteRow deletes every cell of the row written before.
func (m *Mutation) DeleteRow() *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.DeleteRow})
	return m
}

// AddToCell adds delta to the cell at family:qualifier with timestamp ts
// (microseconds, 0 or more: an aggregate cell is named by its timestamp,
// so ServerTime is refused) of an aggregate family: the cell becomes the
// sum, minimum or maximum (the family's value type) of every input written
// there and not deleted, read as an 8-byte big-endian int64. A Mutation
// holding one is not idempotent and is never retried (an outcome the
// client cannot know is returned to the caller).
func (m *Mutation) AddToCell(family string, qualifier []byte, ts, delta int64) *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.AddToCell, Family: family, Qualifier: qualifier, Timestamp: ts, Value: cell.AggregateInput(delta)})
	return m
}

// MergeToCell merges an accumulator state into the cell at
// family:qualifier with timestamp ts of an aggregate family, as Bigtable's
// MergeToCell does. For the sum, min and max families Tabula has, the
// state is an 8-byte big-endian int64 (what a read of an aggregate cell
// returns; see cell.AggregateInput), merged like AddToCell's delta; other
// lengths are refused. Not idempotent, like AddToCell.
func (m *Mutation) MergeToCell(family string, qualifier []byte, ts int64, state []byte) *Mutation {
	m.ops = append(m.ops, cell.Mutation{Kind: cell.MergeToCell, Family: family, Qualifier: qualifier, Timestamp: ts, Value: state})
	return m
}

// Mutations returns the mutation's changes.
func (m *Mutation) Mutations() []cell.Mutation { return m.ops }

// Idempotent reports whether applying m twice equals applying it once
// (no ServerTime cell, no AddToCell or MergeToCell), and so whether it may
// be retried.
func (m *Mutation) Idempotent() bool { return cell.Idempotent(m.ops) }

func (m *Mutation) checked(row []byte) ([]*tabulapb.Mutation, error) {
	if m == nil {
		return nil, invalid("mutation for row %q is nil", row)
	}
	if err := cell.ValidateMutations(row, m.ops); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return convert.MutationsToProto(m.ops), nil
}

// Apply applies m to row atomically.
func (t *Table) Apply(ctx context.Context, row []byte, m *Mutation) error {
	pm, err := m.checked(row)
	if err != nil {
		return err
	}
	return t.c.do(ctx, t.name, row, m.Idempotent(), func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error {
		_, err := ts.MutateRow(ctx, &tabulapb.MutateRowRequest{Tablet: tab.Ref(), RowKey: row, Mutations: pm})
		return err
	})
}

// CheckAndMutate applies onTrue to row if predicate emits any cell of it
// (a nil predicate: if the row has any cell), else onFalse; either may be
// nil for nothing. It reports whether the predicate matched. The whole is
// atomic; it is not retried after an ambiguous failure.
func (t *Table) CheckAndMutate(ctx context.Context, row []byte, predicate *rowfilter.Filter, onTrue, onFalse *Mutation) (bool, error) {
	if err := cell.ValidateRow(row); err != nil {
		return false, status.Error(codes.InvalidArgument, err.Error())
	}
	if predicate != nil {
		if _, err := rowfilter.Compile(predicate); err != nil {
			return false, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	req := &tabulapb.CheckAndMutateRowRequest{RowKey: row, PredicateFilter: convert.FilterToProto(predicate)}
	for _, b := range []struct {
		m   *Mutation
		dst *[]*tabulapb.Mutation
	}{{onTrue, &req.TrueMutations}, {onFalse, &req.FalseMutations}} {
		if b.m == nil || len(b.m.ops) == 0 {
			continue
		}
		pm, err := b.m.checked(row)
		if err != nil {
			return false, err
		}
		*b.dst = pm
	}
	var matched bool
	err := t.c.do(ctx, t.name, row, false, func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error {
		r := cloneCheck(req)
		r.Tablet = tab.Ref()
		resp, err := ts.CheckAndMutateRow(ctx, r)
		if err != nil {
			return err
		}
		matched = resp.GetPredicateMatched()
		return nil
	})
	return matched, err
}

func cloneCheck(r *tabulapb.CheckAndMutateRowRequest) *tabulapb.CheckAndMutateRowRequest {
	return &tabulapb.CheckAndMutateRowRequest{RowKey: r.RowKey, PredicateFilter: r.PredicateFilter,
		TrueMutations: r.TrueMutations, FalseMutations: r.FalseMutations}
}

// ReadModifyWrite is a list of rules applied atomically to one row's
// newest values. Build one with NewReadModifyWrite.
type ReadModifyWrite struct {
	rules []cell.ReadModifyWriteRule
}

// NewReadModifyWrite returns an empty rule list.
func NewReadModifyWrite() *ReadModifyWrite { return &ReadModifyWrite{} }

// Increment adds delta to family:qualifier read as a 64-bit big-endian
// signed integer (absent counts as 0). The sum wraps around in two's
// complement past the int64 range (MaxInt64 + 1 is MinInt64), as HBase's
// increments do; a cell that is not 8 bytes long is an error.
func (r *ReadModifyWrite) Increment(family string, qualifier []byte, delta int64) *ReadModifyWrite {
	r.rules = append(r.rules, cell.ReadModifyWriteRule{Kind: cell.Increment, Family: family, Qualifier: qualifier, IncrementAmount: delta})
	return r
}

// Append appends v to family:qualifier (absent counts as empty).
func (r *ReadModifyWrite) Append(family string, qualifier []byte, v []byte) *ReadModifyWrite {
	r.rules = append(r.rules, cell.ReadModifyWriteRule{Kind: cell.Append, Family: family, Qualifier: qualifier, AppendValue: v})
	return r
}

// ReadModifyWrite applies r to row atomically and returns the new cells
// it wrote. It is not retried after an ambiguous failure.
func (t *Table) ReadModifyWrite(ctx context.Context, row []byte, r *ReadModifyWrite) (Row, error) {
	if err := cell.ValidateRow(row); err != nil {
		return Row{}, status.Error(codes.InvalidArgument, err.Error())
	}
	if r == nil || len(r.rules) == 0 {
		return Row{}, invalid("read-modify-write of row %q has no rules; add Increment or Append", row)
	}
	for i := range r.rules {
		if err := r.rules[i].Validate(); err != nil {
			return Row{}, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	rules := convert.RulesToProto(r.rules)
	var out Row
	err := t.c.do(ctx, t.name, row, false, func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error {
		resp, err := ts.ReadModifyWriteRow(ctx, &tabulapb.ReadModifyWriteRowRequest{Tablet: tab.Ref(), RowKey: row, Rules: rules})
		if err != nil {
			return err
		}
		out = Row{Key: row, Cells: convert.CellsFromProtoRow(resp.GetRow())}
		if k := resp.GetRow().GetKey(); len(k) > 0 && !bytes.Equal(k, row) {
			return status.Errorf(codes.Internal, "client: read-modify-write of %q answered row %q", row, k)
		}
		return nil
	})
	return out, err
}
