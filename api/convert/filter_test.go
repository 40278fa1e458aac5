package convert

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// everyFilter uses every filter kind at least once.
func everyFilter() *rowfilter.Filter {
	return rowfilter.Chain(
		rowfilter.RowKeyPrefix([]byte("user")),
		rowfilter.RowKeyRegex(`user\d+`),
		rowfilter.Interleave(
			rowfilter.Family("a"),
			rowfilter.FamilyRegex("b.*"),
			rowfilter.Chain(rowfilter.QualifierRegex("x"), rowfilter.StripValue()),
		),
		rowfilter.Condition(rowfilter.ValueRegex("yes"), rowfilter.Pass(), rowfilter.Block()),
		rowfilter.Condition(rowfilter.ValueRange([]byte("a"), []byte("b")), nil, rowfilter.CellsPerRowOffset(0)),
		rowfilter.QualifierRange("a", []byte("k"), nil),
		&rowfilter.Filter{Kind: rowfilter.KindQualifierRange, Start: []byte("k"), StartOpen: true, End: []byte("z")},
		&rowfilter.Filter{Kind: rowfilter.KindValueRange, End: []byte("z"), EndOpen: true},
		rowfilter.TimestampRange(10, 0),
		rowfilter.TimestampRange(10, 20),
		rowfilter.CellsPerColumnLimit(2),
		rowfilter.CellsPerRowOffset(1),
		rowfilter.CellsPerRowLimit(5),
		rowfilter.Interleave(rowfilter.Chain(rowfilter.Label("seen"), rowfilter.Sink()), rowfilter.RowSample(0.25)),
	)
}

func TestFilterRoundTripThroughTheWire(t *testing.T) {
	in := everyFilter()
	b, err := proto.Marshal(&tabulapb.ReadRowsRequest{Filter: FilterToProto(in)})
	if err != nil {
		t.Fatal(err)
	}
	var req tabulapb.ReadRowsRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	out, err := FilterFromProto(req.GetFilter())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(in), normalize(out)) {
		t.Errorf("round trip changed the filter:\n in %s\nout %s", dump(in), dump(out))
	}
	if _, err := rowfilter.Compile(out); err != nil {
		t.Errorf("converted filter does not compile: %v", err)
	}
}

// normalize makes nil and empty byte slices alike (the wire does not keep
// the difference for start bounds and prefixes) and drops EndOpen where
// there is no end.
func normalize(f *rowfilter.Filter) *rowfilter.Filter {
	if f == nil {
		return nil
	}
	g := *f
	if len(g.Start) == 0 {
		g.Start = nil
	}
	if g.End == nil {
		g.EndOpen = false // ignored without an end
	}
	if len(g.Prefix) == 0 {
		g.Prefix = nil
	}
	g.Filters = nil
	for _, c := range f.Filters {
		g.Filters = append(g.Filters, normalize(c))
	}
	g.Predicate, g.True, g.False = normalize(f.Predicate), normalize(f.True), normalize(f.False)
	return &g
}

func dump(f *rowfilter.Filter) string {
	if f == nil {
		return "nil"
	}
	var b strings.Builder
	b.WriteString(f.Kind.String())
	b.WriteString("(")
	for _, c := range f.Filters {
		b.WriteString(dump(c) + " ")
	}
	if f.Kind == rowfilter.KindCondition {
		b.WriteString(dump(f.Predicate) + " ? " + dump(f.True) + " : " + dump(f.False))
	}
	b.WriteString(")")
	return b.String()
}

func TestNilFilterPassesEverything(t *testing.T) {
	f, err := FilterFromProto(nil)
	if f != nil || err != nil {
		t.Errorf("FilterFromProto(nil) = %v, %v", f, err)
	}
	if FilterToProto(nil) != nil {
		t.Error("FilterToProto(nil) is not nil")
	}
}

func TestEmptyEndBoundMeansUnbounded(t *testing.T) {
	p := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &tabulapb.ColumnRange{
		StartQualifier: []byte("m"), EndQualifier: nil, EndOpen: true}}}
	f, err := FilterFromProto(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.End != nil || f.EndOpen {
		t.Errorf("empty end gave End=%q EndOpen=%v, want unbounded", f.End, f.EndOpen)
	}
	c, err := rowfilter.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	cells := []cell.Cell{{Family: "f", Qualifier: []byte("a")}, {Family: "f", Qualifier: []byte("zzz")}}
	got := c.Apply([]byte("r"), cells)
	if len(got) != 1 || string(got[0].Qualifier) != "zzz" {
		t.Errorf("range [m, ∞) kept %v", got)
	}
}

// An empty End is a bound (Bigtable's end_*_closed "" passes only "",
// end_*_open "" passes nothing), though the wire reads an empty end as no
// bound: FilterToProto sends a range that passes the same values.
func TestEmptyEndBoundKeepsItsMeaningOnTheWire(t *testing.T) {
	var cells []cell.Cell
	for _, q := range []string{"", "\x00", "\x00\x00", "a"} {
		cells = append(cells, cell.Cell{Row: []byte("r"), Family: "f", Qualifier: []byte(q), Timestamp: 1, Value: []byte(q)})
	}
	var filters []*rowfilter.Filter
	for _, start := range [][]byte{nil, {}, []byte("a")} {
		for _, open := range []bool{false, true} {
			filters = append(filters,
				&rowfilter.Filter{Kind: rowfilter.KindQualifierRange, Family: "f", Start: start, StartOpen: open, End: []byte{}},
				&rowfilter.Filter{Kind: rowfilter.KindQualifierRange, Family: "f", Start: start, End: []byte{}, EndOpen: open},
				&rowfilter.Filter{Kind: rowfilter.KindValueRange, Start: start, StartOpen: open, End: []byte{}},
				&rowfilter.Filter{Kind: rowfilter.KindValueRange, Start: start, End: []byte{}, EndOpen: open},
			)
		}
	}
	for _, f := range filters {
		b, err := proto.Marshal(FilterToProto(f))
		if err != nil {
			t.Fatal(err)
		}
		var p tabulapb.RowFilter
		if err := proto.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		back, err := FilterFromProto(&p)
		if err != nil {
			t.Fatal(err)
		}
		if back.Family != f.Family {
			t.Errorf("%s: family %q became %q", f, f.Family, back.Family)
		}
		want, got := applyFilter(t, f, cells), applyFilter(t, back, cells)
		if want != got {
			t.Errorf("%s became %s on the wire: passes %s, want %s", f, back, got, want)
		}
	}
}

func applyFilter(t *testing.T, f *rowfilter.Filter, cells []cell.Cell) string {
	t.Helper()
	c, err := rowfilter.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, c := range c.Apply([]byte("r"), cells) {
		qs = append(qs, fmt.Sprintf("%q", c.Qualifier))
	}
	return "[" + strings.Join(qs, " ") + "]"
}

func TestNewFiltersFromProto(t *testing.T) {
	p := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Sink{}}
	if _, err := FilterFromProto(p); !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), "filter.sink is false") {
		t.Errorf("sink false: %v", err)
	}
	for _, tc := range []struct {
		p    *tabulapb.RowFilter
		want *rowfilter.Filter
	}{
		{&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Sink{Sink: true}}, rowfilter.Sink()},
		{&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ApplyLabelTransformer{ApplyLabelTransformer: "l-1"}}, rowfilter.Label("l-1")},
		{&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_RowSampleFilter{RowSampleFilter: 0.125}}, rowfilter.RowSample(0.125)},
		// Left for Compile to reject, with Bigtable's reasons.
		{&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ApplyLabelTransformer{}}, rowfilter.Label("")},
		{&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_RowSampleFilter{}}, rowfilter.RowSample(0)},
	} {
		got, err := FilterFromProto(tc.p)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FilterFromProto(%v) = %v, %v; want %v", tc.p, got, err, tc.want)
		}
	}
}

func TestMalformedFiltersAreInvalid(t *testing.T) {
	deep := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_PassAllFilter{PassAllFilter: true}}
	for i := 0; i < rowfilter.MaxDepth+1; i++ {
		deep = &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Chain_{Chain: &tabulapb.RowFilter_Chain{Filters: []*tabulapb.RowFilter{deep}}}}
	}
	cases := []struct {
		name, wantPath string
		p              *tabulapb.RowFilter
	}{
		{"unset", "filter has no filter", &tabulapb.RowFilter{}},
		{"pass false", "pass_all_filter", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_PassAllFilter{}}},
		{"block false", "block_all_filter", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_BlockAllFilter{}}},
		{"strip false", "strip_value", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_StripValueTransformer{}}},
		{"nil child", "filter.chain[1]", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Chain_{Chain: &tabulapb.RowFilter_Chain{
			Filters: []*tabulapb.RowFilter{FilterToProto(rowfilter.Pass()), nil}}}}},
		{"condition without predicate", "predicate_filter", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Condition_{
			Condition: &tabulapb.RowFilter_Condition{TrueFilter: FilterToProto(rowfilter.Pass())}}}},
		{"nil condition", "predicate_filter", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Condition_{}}},
		{"negative limit", "cells_per_row_limit", &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_CellsPerRowLimitFilter{CellsPerRowLimitFilter: -1}}},
		{"too deep", "deep", deep},
		{"unknown kind from Go", "no filter", FilterToProto(&rowfilter.Filter{Kind: 200})},
	}
	for _, c := range cases {
		_, err := FilterFromProto(c.p)
		if !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.wantPath) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.wantPath)
		}
	}
}

func FuzzFilterFromProto(f *testing.F) {
	seed := func(p *tabulapb.RowFilter) {
		b, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(FilterToProto(everyFilter()))
	seed(FilterToProto(rowfilter.Condition(rowfilter.Family("a"), rowfilter.Interleave(), nil)))
	seed(&tabulapb.RowFilter{})
	seed(&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("((")}})
	seed(&tabulapb.RowFilter{Filter: &tabulapb.RowFilter_CellsPerColumnLimitFilter{CellsPerColumnLimitFilter: 0}})
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p tabulapb.RowFilter
		if proto.Unmarshal(b, &p) != nil {
			return
		}
		flt, err := FilterFromProto(&p)
		if err != nil {
			if !errors.Is(err, cell.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		c, err := rowfilter.Compile(flt)
		if err != nil {
			if !errors.Is(err, cell.ErrInvalid) {
				t.Fatalf("compile error %v does not wrap ErrInvalid", err)
			}
			return
		}
		c.Apply([]byte("row"), []cell.Cell{{Row: []byte("row"), Family: "a", Qualifier: []byte("q"), Timestamp: 5, Value: []byte("v")}})
		// What converts back must convert again to the same filter.
		again, err := FilterFromProto(FilterToProto(flt))
		if err != nil {
			t.Fatalf("re-converting a valid filter: %v", err)
		}
		if !reflect.DeepEqual(normalize(flt), normalize(again)) {
			t.Fatalf("round trip changed %s into %s", dump(flt), dump(again))
		}
	})
}

// TestRegexFieldsAreBytesOnTheWire: the row key, qualifier and value regex
// fields are bytes, so a pattern that is not UTF-8 crosses the wire, and
// what an older client sent (the same fields declared string: the same
// wire type) still decodes to the same pattern.
func TestRegexFieldsAreBytesOnTheWire(t *testing.T) {
	for _, f := range []*rowfilter.Filter{
		rowfilter.RowKeyRegex("k\xff"),
		rowfilter.QualifierRegex("q\xff"),
		rowfilter.ValueRegex("v\xff."),
	} {
		b, err := proto.Marshal(FilterToProto(f))
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		var p tabulapb.RowFilter
		if err := proto.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if got, err := FilterFromProto(&p); err != nil || got.Regex != f.Regex {
			t.Errorf("%v came back as %v, %v", f, got, err)
		}
	}
	for field, kind := range map[protowire.Number]rowfilter.Kind{
		6: rowfilter.KindRowKeyRegex, 10: rowfilter.KindQualifierRegex, 13: rowfilter.KindValueRegex,
	} {
		// What a client built with the string fields sends.
		old := protowire.AppendString(protowire.AppendTag(nil, field, protowire.BytesType), "user\\d+")
		var p tabulapb.RowFilter
		if err := proto.Unmarshal(old, &p); err != nil {
			t.Fatalf("field %d: %v", field, err)
		}
		if got, err := FilterFromProto(&p); err != nil || got.Kind != kind || got.Regex != "user\\d+" {
			t.Errorf("field %d decoded as %v, %v", field, got, err)
		}
	}
}
