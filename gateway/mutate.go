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

// field names a field of a request in error messages: a field of the
// request itself (entry < 0), or of one MutateRows entry. It is formatted
// only when a message is written, so that a valid request costs no string
// building.
type field struct {
	entry int
	name  string
}

// topField is the field name of the request itself.
func topField(name string) field { return field{entry: -1, name: name} }

func (f field) String() string {
	if f.entry < 0 {
		return f.name
	}
	return fmt.Sprintf("entries[%d].%s", f.entry, f.name)
}

// mutation converts one row's Bigtable mutations.
func mutation(f field, ms []*btpb.Mutation) (*client.Mutation, error) {
	if len(ms) == 0 {
		return nil, invalidf("%s: no mutations provided; give at least one", f)
	}
	if len(ms) > maxMutations {
		return nil, invalidf("%s: %d mutations in one row exceed the limit of %d; split them over several requests", f, len(ms), maxMutations)
	}
	m := client.NewMutation()
	for i, pm := range ms {
		// bad answers INVALID_ARGUMENT for mutation i, rest saying which
		// of its fields and what is wrong.
		bad := func(rest string) error { return invalidf("%s[%d]%s", f, i, rest) }
		switch x := pm.GetMutation().(type) {
		case *btpb.Mutation_SetCell_:
			sc := x.SetCell
			ts := sc.GetTimestampMicros()
			if p := timestampProblem(ts, true); p != "" {
				return nil, bad(".set_cell.timestamp_micros: " + p)
			}
			m.Set(sc.GetFamilyName(), sc.GetColumnQualifier(), ts, sc.GetValue())
		case *btpb.Mutation_DeleteFromColumn_:
			dc := x.DeleteFromColumn
			r := dc.GetTimeRange()
			start, end := r.GetStartTimestampMicros(), r.GetEndTimestampMicros()
			if p := timestampProblem(start, false); p != "" {
				return nil, bad(".delete_from_column.time_range.start_timestamp_micros: " + p)
			}
			if p := timestampProblem(end, false); p != "" {
				return nil, bad(".delete_from_column.time_range.end_timestamp_micros: " + p)
			}
			if end != 0 && end < start {
				return nil, bad(fmt.Sprintf(".delete_from_column.time_range: end %d is before start %d", end, start))
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
			col, ts, err := aggregateCell(".add_to_cell", a.GetColumnQualifier(), a.GetTimestamp(), bad)
			if err != nil {
				return nil, err
			}
			in, ok := a.GetInput().GetKind().(*btpb.Value_IntValue)
			if !ok {
				return nil, bad(".add_to_cell.input must be an int_value")
			}
			m.AddToCell(a.GetFamilyName(), col, ts, in.IntValue)
		case *btpb.Mutation_MergeToCell_:
			mc := x.MergeToCell
			col, ts, err := aggregateCell(".merge_to_cell", mc.GetColumnQualifier(), mc.GetTimestamp(), bad)
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
				return nil, bad(".merge_to_cell.input must be a raw_value or an int_value")
			}
			m.MergeToCell(mc.GetFamilyName(), col, ts, state)
		default:
			return nil, bad(": set one mutation")
		}
	}
	for _, op := range m.Mutations() {
		if err := op.Validate(); err != nil {
			return nil, invalidf("%s: %s", f, trimInvalid(err))
		}
	}
	return m, nil
}

// aggregateCell reads the column and timestamp of an AddToCell or
// MergeToCell (sub names which): a raw_value qualifier and a
// raw_timestamp_micros. bad makes the error of the mutation.
func aggregateCell(sub string, q, ts *btpb.Value, bad func(rest string) error) ([]byte, int64, error) {
	col, ok := q.GetKind().(*btpb.Value_RawValue)
	if !ok {
		return nil, 0, bad(sub + ".column_qualifier must be a raw_value")
	}
	t, ok := ts.GetKind().(*btpb.Value_RawTimestampMicros)
	if !ok {
		return nil, 0, bad(sub + ".timestamp must be a raw_timestamp_micros")
	}
	if p := timestampProblem(t.RawTimestampMicros, false); p != "" {
		return nil, 0, bad(sub + ".timestamp: " + p)
	}
	return col.RawValue, t.RawTimestampMicros, nil
}

// timestampProblem enforces Bigtable's rules on a timestamp: -1 (the
// server's clock) where allowed, else >= 0 and millisecond-aligned. It
// returns what is wrong, or "".
func timestampProblem(ts int64, serverTime bool) string {
	if serverTime && ts == cell.ServerTimestamp {
		return ""
	}
	if ts < 0 {
		return fmt.Sprintf("timestamp %d is negative; give microseconds since the Unix epoch, or -1 for the server's clock", ts)
	}
	if ts%microsPerMilli != 0 {
		return fmt.Sprintf("Timestamp granularity mismatch: timestamp %d is not a multiple of %d microseconds, as required by the table's MILLIS granularity", ts, microsPerMilli)
	}
	return ""
}

// MutateRow applies one row's mutations atomically.
func (d *dataServer) MutateRow(ctx context.Context, req *btpb.MutateRowRequest) (*btpb.MutateRowResponse, error) {
	tbl, err := d.rowTable(ctx, req)
	if err != nil {
		return nil, err
	}
	m, err := mutation(topField("mutations"), req.GetMutations())
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
func (d *dataServer) rowTable(ctx context.Context, req rowRequest) (*client.Table, error) {
	if err := viewsUnsupported(req.GetAuthorizedViewName(), ""); err != nil {
		return nil, err
	}
	tbl, _, err := d.s.table(ctx, "table_name", req.GetTableName())
	if err != nil {
		return nil, err
	}
	return tbl, checkRowKey(topField("row_key"), req.GetRowKey())
}

// checkRowKey refuses what Bigtable refuses: empty keys and keys over
// 4 KiB.
func checkRowKey(f field, key []byte) error {
	if err := cell.ValidateRow(key); err != nil {
		return invalidf("%s: %s", f, trimInvalid(err))
	}
	return nil
}

// MutateRows applies each entry's mutations atomically per row, and answers
// each entry's outcome: a bad entry fails alone, as in Bigtable.
func (d *dataServer) MutateRows(req *btpb.MutateRowsRequest, stream btpb.Bigtable_MutateRowsServer) error {
	if err := viewsUnsupported(req.GetAuthorizedViewName(), ""); err != nil {
		return err
	}
	tbl, _, err := d.s.table(stream.Context(), "table_name", req.GetTableName())
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
	results := entryStatuses(len(entries))
	var rows [][]byte
	var muts []*client.Mutation
	var index []int
	for i, e := range entries {
		err := checkRowKey(field{i, "row_key"}, e.GetRowKey())
		var m *client.Mutation
		if err == nil {
			m, err = mutation(field{i, "mutations"}, e.GetMutations())
		}
		if err != nil {
			setStatus(results[i], err)
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
			setStatus(results[i], errs[j])
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

// entryStatuses builds the answers of n MutateRows entries, each with its
// index and an OK status until set, in two allocations instead of three
// per entry.
func entryStatuses(n int) []*btpb.MutateRowsResponse_Entry {
	entries := make([]btpb.MutateRowsResponse_Entry, n)
	statuses := make([]status.Status, n)
	out := make([]*btpb.MutateRowsResponse_Entry, n)
	for i := range out {
		entries[i].Index, entries[i].Status = int64(i), &statuses[i]
		out[i] = &entries[i]
	}
	return out
}

// setStatus records err, a nil err being OK, in the answer of an entry.
func setStatus(e *btpb.MutateRowsResponse_Entry, err error) {
	if err == nil {
		return
	}
	st := gstatus.Convert(toStatus(err))
	e.Status.Code, e.Status.Message = int32(st.Code()), st.Message()
	// A quota refusal's RetryInfo tells the Bigtable client when to retry.
	e.Status.Details = st.Proto().GetDetails()
}

// CheckAndMutateRow applies true_mutations when the predicate emits a cell
// of the row (an unset predicate: when the row has any cell), else
// false_mutations, atomically.
func (d *dataServer) CheckAndMutateRow(ctx context.Context, req *btpb.CheckAndMutateRowRequest) (*btpb.CheckAndMutateRowResponse, error) {
	tbl, err := d.rowTable(ctx, req)
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
	branch := func(name string, ms []*btpb.Mutation) (*client.Mutation, error) {
		if len(ms) == 0 {
			return nil, nil
		}
		return mutation(topField(name), ms)
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
	tbl, err := d.rowTable(ctx, req)
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
