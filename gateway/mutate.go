package gateway

import (
	"context"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/status"
	gstatus "google.golang.org/grpc/status"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// maxMutations is Bigtable's limit on the mutations of one row in one
// request.
const maxMutations = 100_000

// microsPerMilli is the granularity of the timestamps the gateway accepts:
// tables served through it report MILLIS granularity, as Bigtable's do by
// default, and so take only millisecond-aligned timestamps.
const microsPerMilli = 1000

// mutation converts one row's Bigtable mutations.
func mutation(field string, ms []*btpb.Mutation) (*client.Mutation, error) {
	if len(ms) == 0 {
		return nil, invalidf("%s: no mutations provided; give at least one", field)
	}
	if len(ms) > maxMutations {
		return nil, invalidf("%s: %d mutations in one row exceed the limit of %d; split them over several requests", field, len(ms), maxMutations)
	}
	m := client.NewMutation()
	for i, pm := range ms {
		path := fmt.Sprintf("%s[%d]", field, i)
		switch x := pm.GetMutation().(type) {
		case *btpb.Mutation_SetCell_:
			sc := x.SetCell
			ts := sc.GetTimestampMicros()
			if err := checkTimestamp(path+".set_cell.timestamp_micros", ts, true); err != nil {
				return nil, err
			}
			m.Set(sc.GetFamilyName(), sc.GetColumnQualifier(), ts, sc.GetValue())
		case *btpb.Mutation_DeleteFromColumn_:
			dc := x.DeleteFromColumn
			r := dc.GetTimeRange()
			start, end := r.GetStartTimestampMicros(), r.GetEndTimestampMicros()
			if err := checkTimestamp(path+".delete_from_column.time_range.start_timestamp_micros", start, false); err != nil {
				return nil, err
			}
			if err := checkTimestamp(path+".delete_from_column.time_range.end_timestamp_micros", end, false); err != nil {
				return nil, err
			}
			if end != 0 && end < start {
				return nil, invalidf("%s.delete_from_column.time_range: end %d is before start %d", path, end, start)
			}
			if r == nil || start == 0 && end == 0 {
				m.DeleteColumn(dc.GetFamilyName(), dc.GetColumnQualifier())
			} else {
				m.DeleteColumnRange(dc.GetFamilyName(), dc.GetColumnQualifier(), start, end)
			}
		case *btpb.Mutation_DeleteFromFamily_:
			m.DeleteFamily(x.DeleteFromFamily.GetFamilyName())
		case *btpb.Mutation_DeleteFromRow_:
			m.DeleteRow()
		case *btpb.Mutation_AddToCell_:
			a := x.AddToCell
			col, ts, err := aggregateCell(path+".add_to_cell", a.GetColumnQualifier(), a.GetTimestamp())
			if err != nil {
				return nil, err
			}
			in, ok := a.GetInput().GetKind().(*btpb.Value_IntValue)
			if !ok {
				return nil, invalidf("%s.add_to_cell.input must be an int_value", path)
			}
			m.AddToCell(a.GetFamilyName(), col, ts, in.IntValue)
		case *btpb.Mutation_MergeToCell_:
			mc := x.MergeToCell
			col, ts, err := aggregateCell(path+".merge_to_cell", mc.GetColumnQualifier(), mc.GetTimestamp())
			if err != nil {
				return nil, err
			}
			var state []byte
			switch in := mc.GetInput().GetKind().(type) {
			case *btpb.Value_RawValue:
				state = in.RawValue
			case *btpb.Value_IntValue:
				state = cell.AggregateInput(in.IntValue)
			default:
				return nil, invalidf("%s.merge_to_cell.input must be a raw_value or an int_value", path)
			}
			m.MergeToCell(mc.GetFamilyName(), col, ts, state)
		default:
			return nil, invalidf("%s: set one mutation", path)
		}
	}
	for _, op := range m.Mutations() {
		if err := op.Validate(); err != nil {
			return nil, invalidf("%s: %s", field, trimInvalid(err))
		}
	}
	return m, nil
}

// aggregateCell reads the column and timestamp of an AddToCell or
// MergeToCell: a raw_value qualifier and a raw_timestamp_micros.
func aggregateCell(field string, q, ts *btpb.Value) ([]byte, int64, error) {
	col, ok := q.GetKind().(*btpb.Value_RawValue)
	if !ok {
		return nil, 0, invalidf("%s.column_qualifier must be a raw_value", field)
	}
	t, ok := ts.GetKind().(*btpb.Value_RawTimestampMicros)
	if !ok {
		return nil, 0, invalidf("%s.timestamp must be a raw_timestamp_micros", field)
	}
	if err := checkTimestamp(field+".timestamp", t.RawTimestampMicros, false); err != nil {
		return nil, 0, err
	}
	return col.RawValue, t.RawTimestampMicros, nil
}

// checkTimestamp enforces Bigtable's rules on a timestamp: -1 (the
// server's clock) where allowed, else >= 0 and millisecond-aligned.
func checkTimestamp(field string, ts int64, serverTime bool) error {
	if serverTime && ts == cell.ServerTimestamp {
		return nil
	}
	if ts < 0 {
		return invalidf("%s: timestamp %d is negative; give microseconds since the Unix epoch, or -1 for the server's clock", field, ts)
	}
	if ts%microsPerMilli != 0 {
		return invalidf("%s: Timestamp granularity mismatch: timestamp %d is not a multiple of %d microseconds, as required by the table's MILLIS granularity", field, ts, microsPerMilli)
	}
	return nil
}

// MutateRow applies one row's mutations atomically.
func (d *dataServer) MutateRow(ctx context.Context, req *btpb.MutateRowRequest) (*btpb.MutateRowResponse, error) {
	tbl, err := d.rowTable(req)
	if err != nil {
		return nil, err
	}
	m, err := mutation("mutations", req.GetMutations())
	if err != nil {
		return nil, err
	}
	if err := tbl.Apply(ctx, req.GetRowKey(), m); err != nil {
		return nil, toStatus(err)
	}
	return &btpb.MutateRowResponse{}, nil
}

// rowRequest is a single-row data request.
type rowRequest interface {
	GetTableName() string
	GetAuthorizedViewName() string
	GetRowKey() []byte
}

// rowTable checks a single-row request's table and row key.
func (d *dataServer) rowTable(req rowRequest) (*client.Table, error) {
	if err := viewsUnsupported(req.GetAuthorizedViewName(), ""); err != nil {
		return nil, err
	}
	tbl, _, err := d.s.table("table_name", req.GetTableName())
	if err != nil {
		return nil, err
	}
	return tbl, checkRowKey("row_key", req.GetRowKey())
}

// checkRowKey refuses what Bigtable refuses: empty keys and keys over
// 4 KiB.
func checkRowKey(field string, key []byte) error {
	if err := cell.ValidateRow(key); err != nil {
		return invalidf("%s: %s", field, trimInvalid(err))
	}
	return nil
}

// MutateRows applies each entry's mutations atomically per row, and answers
// each entry's outcome: a bad entry fails alone, as in Bigtable.
func (d *dataServer) MutateRows(req *btpb.MutateRowsRequest, stream btpb.Bigtable_MutateRowsServer) error {
	if err := viewsUnsupported(req.GetAuthorizedViewName(), ""); err != nil {
		return err
	}
	tbl, _, err := d.s.table("table_name", req.GetTableName())
	if err != nil {
		return err
	}
	entries := req.GetEntries()
	if len(entries) == 0 {
		return invalidf("entries: no entries provided; give at least one")
	}
	total := 0
	for _, e := range entries {
		total += len(e.GetMutations())
	}
	if total > maxMutations {
		return invalidf("entries: %d mutations in one request exceed the limit of %d; send fewer entries per request", total, maxMutations)
	}
	results := make([]*btpb.MutateRowsResponse_Entry, len(entries))
	var rows [][]byte
	var muts []*client.Mutation
	var index []int
	for i, e := range entries {
		field := fmt.Sprintf("entries[%d]", i)
		err := checkRowKey(field+".row_key", e.GetRowKey())
		var m *client.Mutation
		if err == nil {
			m, err = mutation(field+".mutations", e.GetMutations())
		}
		if err != nil {
			results[i] = entryStatus(i, err)
			continue
		}
		rows, muts, index = append(rows, e.GetRowKey()), append(muts, m), append(index, i)
	}
	if len(rows) > 0 {
		errs, err := tbl.ApplyBulk(stream.Context(), rows, muts)
		if errs == nil {
			return toStatus(err)
		}
		for j, i := range index {
			results[i] = entryStatus(i, errs[j])
		}
	}
	return sendEntries(stream, results)
}

// sendEntries answers MutateRows' entries in messages well below gRPC's
// default 4 MiB limit.
func sendEntries(stream btpb.Bigtable_MutateRowsServer, results []*btpb.MutateRowsResponse_Entry) error {
	const perMessage = 10_000
	for len(results) > 0 {
		n := min(len(results), perMessage)
		if err := stream.Send(&btpb.MutateRowsResponse{Entries: results[:n]}); err != nil {
			return err
		}
		results = results[n:]
	}
	return nil
}

// entryStatus answers one MutateRows entry; a nil err is OK.
func entryStatus(i int, err error) *btpb.MutateRowsResponse_Entry {
	st := gstatus.Convert(toStatus(err))
	return &btpb.MutateRowsResponse_Entry{Index: int64(i), Status: &status.Status{Code: int32(st.Code()), Message: st.Message()}}
}

// CheckAndMutateRow applies true_mutations when the predicate emits a cell
// of the row (an unset predicate: when the row has any cell), else
// false_mutations, atomically.
func (d *dataServer) CheckAndMutateRow(ctx context.Context, req *btpb.CheckAndMutateRowRequest) (*btpb.CheckAndMutateRowResponse, error) {
	tbl, err := d.rowTable(req)
	if err != nil {
		return nil, err
	}
	pred, err := filter(req.GetPredicateFilter())
	if err != nil {
		return nil, err
	}
	if len(req.GetTrueMutations())+len(req.GetFalseMutations()) == 0 {
		// Bigtable's rule and message: at least one branch must mutate.
		return nil, invalidf("No mutations provided")
	}
	if len(req.GetTrueMutations())+len(req.GetFalseMutations()) > maxMutations {
		return nil, invalidf("true_mutations and false_mutations hold more than %d mutations", maxMutations)
	}
	branch := func(field string, ms []*btpb.Mutation) (*client.Mutation, error) {
		if len(ms) == 0 {
			return nil, nil
		}
		return mutation(field, ms)
	}
	onTrue, err := branch("true_mutations", req.GetTrueMutations())
	if err != nil {
		return nil, err
	}
	onFalse, err := branch("false_mutations", req.GetFalseMutations())
	if err != nil {
		return nil, err
	}
	matched, err := tbl.CheckAndMutate(ctx, req.GetRowKey(), pred, onTrue, onFalse)
	if err != nil {
		return nil, toStatus(err)
	}
	return &btpb.CheckAndMutateRowResponse{PredicateMatched: matched}, nil
}

// ReadModifyWriteRow applies append and increment rules to the newest
// values of a row atomically and answers the new cells.
func (d *dataServer) ReadModifyWriteRow(ctx context.Context, req *btpb.ReadModifyWriteRowRequest) (*btpb.ReadModifyWriteRowResponse, error) {
	tbl, err := d.rowTable(req)
	if err != nil {
		return nil, err
	}
	if len(req.GetRules()) == 0 {
		return nil, invalidf("rules: no rules provided; give at least one append_value or increment_amount")
	}
	rmw := client.NewReadModifyWrite()
	for i, r := range req.GetRules() {
		switch x := r.GetRule().(type) {
		case *btpb.ReadModifyWriteRule_AppendValue:
			rmw.Append(r.GetFamilyName(), r.GetColumnQualifier(), x.AppendValue)
		case *btpb.ReadModifyWriteRule_IncrementAmount:
			rmw.Increment(r.GetFamilyName(), r.GetColumnQualifier(), x.IncrementAmount)
		default:
			return nil, invalidf("rules[%d]: set append_value or increment_amount", i)
		}
	}
	row, err := tbl.ReadModifyWrite(ctx, req.GetRowKey(), rmw)
	if err != nil {
		return nil, toStatus(err)
	}
	return &btpb.ReadModifyWriteRowResponse{Row: protoRow(req.GetRowKey(), row.Cells)}, nil
}

// protoRow groups cells (in read order) into a Bigtable Row.
func protoRow(key []byte, cells []cell.Cell) *btpb.Row {
	out := &btpb.Row{Key: key}
	var fam *btpb.Family
	var col *btpb.Column
	for i := range cells {
		c := &cells[i]
		if fam == nil || fam.Name != c.Family {
			fam = &btpb.Family{Name: c.Family}
			out.Families = append(out.Families, fam)
			col = nil
		}
		if col == nil || string(col.Qualifier) != string(c.Qualifier) {
			col = &btpb.Column{Qualifier: c.Qualifier}
			fam.Columns = append(fam.Columns, col)
		}
		col.Cells = append(col.Cells, &btpb.Cell{TimestampMicros: c.Timestamp, Value: c.Value, Labels: c.Labels})
	}
	return out
}
