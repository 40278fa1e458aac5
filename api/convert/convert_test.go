package convert

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"google.golang.org/protobuf/proto"
)

func TestMutationsRoundTrip(t *testing.T) {
	in := []cell.Mutation{
		{Kind: cell.SetCell, Family: "cf", Qualifier: []byte("q"), Timestamp: 17, Value: []byte("v")},
		{Kind: cell.SetCell, Family: "cf", Qualifier: []byte("q2"), Timestamp: cell.ServerTimestamp, Value: []byte{}},
		{Kind: cell.DeleteColumn, Family: "cf", Qualifier: []byte("q"), TimeStart: 3, TimeEnd: 9},
		{Kind: cell.DeleteFamily, Family: "other"},
		{Kind: cell.DeleteRow},
		{Kind: cell.AddToCell, Family: "agg", Qualifier: []byte("n"), Timestamp: 5, Value: cell.AggregateInput(-42)},
		{Kind: cell.MergeToCell, Family: "agg", Qualifier: []byte("n"), Timestamp: 0, Value: cell.AggregateInput(1 << 40)},
	}
	// Through the wire, as the server sees them.
	b, err := proto.Marshal(&tabulapb.MutateRowRequest{Mutations: MutationsToProto(in)})
	if err != nil {
		t.Fatal(err)
	}
	var req tabulapb.MutateRowRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	out, err := MutationsFromProto(req.GetMutations())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("got %d mutations, want %d", len(out), len(in))
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Kind != b.Kind || a.Family != b.Family || string(a.Qualifier) != string(b.Qualifier) ||
			a.Timestamp != b.Timestamp || string(a.Value) != string(b.Value) || a.TimeStart != b.TimeStart || a.TimeEnd != b.TimeEnd {
			t.Errorf("mutation %d: sent %+v, got %+v", i, a, b)
		}
	}
}

func TestMutationWithoutKindIsInvalid(t *testing.T) {
	for _, ms := range [][]*tabulapb.Mutation{
		{{}},
		{nil},
		{MutationToProto(&cell.Mutation{Kind: cell.DeleteRow}), {}},
		{{Mutation: &tabulapb.Mutation_SetCell_{}}},
		MutationsToProto([]cell.Mutation{{Kind: 99}}),
		{{Mutation: &tabulapb.Mutation_AddToCell_{}}},
		{{Mutation: &tabulapb.Mutation_MergeToCell_{}}},
		// An AddToCell without an 8-byte input cannot be sent as one.
		MutationsToProto([]cell.Mutation{{Kind: cell.AddToCell, Family: "agg", Value: []byte{1}}}),
	} {
		_, err := MutationsFromProto(ms)
		if !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("MutationsFromProto(%v) = %v, want ErrInvalid", ms, err)
		}
	}
}

func TestRulesRoundTrip(t *testing.T) {
	in := []cell.ReadModifyWriteRule{
		{Kind: cell.Append, Family: "cf", Qualifier: []byte("a"), AppendValue: []byte("tail")},
		{Kind: cell.Append, Family: "cf", Qualifier: []byte("e")},
		{Kind: cell.Increment, Family: "cf", Qualifier: []byte("n"), IncrementAmount: -5},
	}
	b, err := proto.Marshal(&tabulapb.ReadModifyWriteRowRequest{Rules: RulesToProto(in)})
	if err != nil {
		t.Fatal(err)
	}
	var req tabulapb.ReadModifyWriteRowRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	out, err := RulesFromProto(req.GetRules())
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		a, b := in[i], out[i]
		if a.Kind != b.Kind || a.Family != b.Family || string(a.Qualifier) != string(b.Qualifier) ||
			string(a.AppendValue) != string(b.AppendValue) || a.IncrementAmount != b.IncrementAmount {
			t.Errorf("rule %d: sent %+v, got %+v", i, a, b)
		}
	}
	if _, err := RulesFromProto([]*tabulapb.ReadModifyWriteRule{{Family: "cf"}}); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("rule without kind: %v", err)
	}
}

func TestCellsRoundTrip(t *testing.T) {
	row := []byte("r1")
	in := []cell.Cell{
		{Row: row, Family: "a", Qualifier: []byte("q"), Timestamp: 9, Value: []byte("x")},
		{Row: row, Family: "a", Qualifier: []byte("q"), Timestamp: 3, Value: []byte("y")},
		{Row: row, Family: "b", Qualifier: nil, Timestamp: 1, Value: nil, Labels: []string{"lbl"}},
	}
	p := CellsToProtoRow(row, in)
	if string(p.GetKey()) != "r1" || len(p.GetCells()) != 3 {
		t.Fatalf("proto row %v", p)
	}
	out := CellsFromProtoRow(p)
	for i := range in {
		if cell.Compare(&in[i], &out[i]) != 0 || string(in[i].Value) != string(out[i].Value) || !slices.Equal(in[i].Labels, out[i].Labels) {
			t.Errorf("cell %d: %+v became %+v", i, in[i], out[i])
		}
	}
	if got := CellsFromProtoRow(nil); len(got) != 0 {
		t.Errorf("nil row gave %v", got)
	}
}

func TestFamilyRoundTrip(t *testing.T) {
	in := []families.Family{
		{Name: "plain"},
		families.Default("d"),
		{Name: "all", MaxVersions: 3, TTL: 36 * time.Hour, GC: families.GCIntersection,
			Compression: families.CompressionZstd, Bloom: families.BloomRowColumn, BlockSize: 64 << 10, InMemory: true},
		{Name: "nested", GCRule: families.UnionRule(families.MaxVersionsRule(3),
			families.IntersectionRule(families.MaxAgeRule(7*24*time.Hour), families.MaxVersionsRule(1)), families.IntersectionRule())},
		{Name: "leaf", GCRule: families.MaxAgeRule(1500 * time.Microsecond)},
		{Name: "sum", ValueType: families.Sum},
		{Name: "min", ValueType: families.Min, MaxVersions: 1},
		{Name: "max", ValueType: families.Max},
		{Name: "typed", DeclaredType: "\x1a\x00\xff"},
	}
	out, err := FamiliesFromProto(FamiliesToProto(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("families round trip:\n in %+v\nout %+v", in, out)
	}
}

func TestFamilyFromProtoRejects(t *testing.T) {
	cases := map[string]*tabulapb.Family{
		"nil":           nil,
		"bad name":      {Name: "a b"},
		"neg versions":  {Name: "f", MaxVersions: -1},
		"neg ttl":       {Name: "f", TtlMicros: -1},
		"huge ttl":      {Name: "f", TtlMicros: 1 << 62},
		"bad enum":      {Name: "f", Compression: 7},
		"neg enum":      {Name: "f", Bloom: -1},
		"small block":   {Name: "f", BlockSize: 10},
		"neg block":     {Name: "f", BlockSize: -10},
		"gc out of set": {Name: "f", Gc: 300},
		"empty rule":    {Name: "f", GcRule: &tabulapb.GCRule{}},
		"empty child": {Name: "f", GcRule: &tabulapb.GCRule{Rule: &tabulapb.GCRule_Union{Union: &tabulapb.GCRule_Rules{
			Rules: []*tabulapb.GCRule{{}}}}}},
		"zero versions": {Name: "f", GcRule: &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxNumVersions{}}},
		"neg age":       {Name: "f", GcRule: &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxAgeMicros{MaxAgeMicros: -1}}},
		"huge age":      {Name: "f", GcRule: &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxAgeMicros{MaxAgeMicros: 1 << 62}}},
		"both forms":    {Name: "f", MaxVersions: 2, GcRule: &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxNumVersions{MaxNumVersions: 1}}},
		"too deep":      {Name: "f", GcRule: nestedUnions(families.MaxGCRuleDepth + 1)},
		"too deep 1000": {Name: "f", GcRule: nestedUnions(1000)},
		"too many":      {Name: "f", GcRule: wideUnion(families.MaxGCRuleNodes)},
		"value type":    {Name: "f", ValueType: 4},
		"neg type":      {Name: "f", ValueType: -1},
		"declared sum":  {Name: "f", ValueType: tabulapb.ValueType_VALUE_TYPE_SUM, DeclaredType: []byte{1}},
		"huge declared": {Name: "f", DeclaredType: make([]byte, families.MaxDeclaredTypeLen+1)},
	}
	for name, p := range cases {
		if _, err := FamilyFromProto(p); !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	_, err := FamiliesFromProto([]*tabulapb.Family{{Name: "f"}, {Name: "f"}})
	if !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate family: %v", err)
	}
}

func nestedUnions(depth int) *tabulapb.GCRule {
	r := &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxNumVersions{MaxNumVersions: 1}}
	for range depth - 1 {
		r = &tabulapb.GCRule{Rule: &tabulapb.GCRule_Union{Union: &tabulapb.GCRule_Rules{Rules: []*tabulapb.GCRule{r}}}}
	}
	return r
}

func wideUnion(n int) *tabulapb.GCRule {
	rs := &tabulapb.GCRule_Rules{}
	for range n {
		rs.Rules = append(rs.Rules, &tabulapb.GCRule{Rule: &tabulapb.GCRule_MaxNumVersions{MaxNumVersions: 1}})
	}
	return &tabulapb.GCRule{Rule: &tabulapb.GCRule_Union{Union: rs}}
}

// The limits accept what they name, over the wire too.
func TestGCRuleAtTheLimitsRoundTrips(t *testing.T) {
	for _, p := range []*tabulapb.GCRule{nestedUnions(families.MaxGCRuleDepth), wideUnion(families.MaxGCRuleNodes - 1)} {
		b, err := proto.Marshal(&tabulapb.Family{Name: "f", GcRule: p})
		if err != nil {
			t.Fatal(err)
		}
		var wire tabulapb.Family
		if err := proto.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		f, err := FamilyFromProto(&wire)
		if err != nil {
			t.Fatal(err)
		}
		if back := FamilyToProto(f); !proto.Equal(back.GetGcRule(), p) {
			t.Errorf("round trip changed the rule: %v != %v", back.GetGcRule(), p)
		}
	}
}
