package gateway

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// protoTable describes a Tabula table as a Bigtable Table in the given view.
func (s *Server) protoTable(n tableName, info client.TableInfo, view btapb.Table_View) *btapb.Table {
	t := &btapb.Table{Name: n.String()}
	if view == btapb.Table_NAME_ONLY {
		return t
	}
	t.Granularity = btapb.Table_MILLIS
	t.DeletionProtection = info.DeletionProtection
	t.ColumnFamilies = map[string]*btapb.ColumnFamily{}
	for i := range info.Families {
		f := &info.Families[i]
		t.ColumnFamilies[f.Name] = &btapb.ColumnFamily{GcRule: protoRule(f.EffectiveGCRule()), ValueType: protoValueType(f)}
	}
	if view == btapb.Table_REPLICATION_VIEW || view == btapb.Table_FULL {
		// One cluster, strongly consistent: always ready.
		t.ClusterStates = map[string]*btapb.Table_ClusterState{
			s.opts.ClusterID: {ReplicationState: btapb.Table_ClusterState_READY},
		}
	}
	return t
}

// protoRule describes a GC rule as a Bigtable GcRule; no rule is an empty
// GcRule (keep everything), as Bigtable answers.
func protoRule(r *families.GCRule) *btapb.GcRule {
	if r == nil {
		return &btapb.GcRule{}
	}
	switch r.Kind {
	case families.RuleMaxVersions:
		return &btapb.GcRule{Rule: &btapb.GcRule_MaxNumVersions{MaxNumVersions: int32(r.MaxVersions)}}
	case families.RuleMaxAge:
		return &btapb.GcRule{Rule: &btapb.GcRule_MaxAge{MaxAge: durationpb.New(r.MaxAge)}}
	}
	rules := make([]*btapb.GcRule, len(r.Rules))
	for i, c := range r.Rules {
		rules[i] = protoRule(c)
	}
	if r.Kind == families.RuleIntersection {
		return &btapb.GcRule{Rule: &btapb.GcRule_Intersection_{Intersection: &btapb.GcRule_Intersection{Rules: rules}}}
	}
	return &btapb.GcRule{Rule: &btapb.GcRule_Union_{Union: &btapb.GcRule_Union{Rules: rules}}}
}

// protoValueType describes a family's value type: its aggregate, or the
// type a client declared for a plain family; plain bytes with none
// declared is unset, as Bigtable leaves it.
func protoValueType(f *families.Family) *btapb.Type {
	if f.DeclaredType != "" {
		t := &btapb.Type{}
		if err := proto.Unmarshal([]byte(f.DeclaredType), t); err == nil {
			return t
		}
		// Only this gateway writes it, from a Type it parsed; a record
		// that no longer parses is reported as plain bytes.
		return nil
	}
	agg := &btapb.Type_Aggregate{
		InputType: int64Type(),
		StateType: int64Type(),
	}
	switch f.ValueType {
	case families.Sum:
		agg.Aggregator = &btapb.Type_Aggregate_Sum_{Sum: &btapb.Type_Aggregate_Sum{}}
	case families.Min:
		agg.Aggregator = &btapb.Type_Aggregate_Min_{Min: &btapb.Type_Aggregate_Min{}}
	case families.Max:
		agg.Aggregator = &btapb.Type_Aggregate_Max_{Max: &btapb.Type_Aggregate_Max{}}
	default:
		return nil
	}
	return &btapb.Type{Kind: &btapb.Type_AggregateType{AggregateType: agg}}
}

func int64Type() *btapb.Type {
	return &btapb.Type{Kind: &btapb.Type_Int64Type{Int64Type: &btapb.Type_Int64{
		Encoding: &btapb.Type_Int64_Encoding{Encoding: &btapb.Type_Int64_Encoding_BigEndianBytes_{BigEndianBytes: &btapb.Type_Int64_Encoding_BigEndianBytes{}}},
	}}}
}

// familyFrom builds a family from a Bigtable ColumnFamily, keeping base's
// storage settings (compression, bloom, block size) and value type; a new
// family gets the admin API's defaults.
func familyFrom(name string, cf *btapb.ColumnFamily, base families.Family, field string) (families.Family, error) {
	f := base
	f.Name = name
	if err := setFields(&f, cf, impliedPaths(cf), field); err != nil {
		return f, err
	}
	return f, validFamily(f, field)
}

// familyUpdate changes the fields of cur that paths (an update mask of
// ColumnFamily) name to cf's. A value type changes only where the cells
// keep their meaning, as Bigtable allows: a plain family may get, change
// or lose a declared type (its cells stay the bytes written); an
// aggregate's type is immutable, and a plain family does not become an
// aggregate (its cells were not written as int64 inputs). The master
// holds the aggregate to the same rule (families.CheckModify).
func familyUpdate(cur families.Family, cf *btapb.ColumnFamily, paths []string, field string) (families.Family, error) {
	f := cur
	if err := setFields(&f, cf, paths, field); err != nil {
		return f, err
	}
	switch {
	case cur.ValueType.IsAggregate() && f.ValueType != cur.ValueType:
		return f, invalidf("%s: Immutable fields 'value_type.aggregate_type' cannot be updated: family %s is a %s aggregate; create a new family for another type",
			field, f.Name, cur.ValueType)
	case !cur.ValueType.IsAggregate() && f.ValueType.IsAggregate():
		return f, invalidf("%s.value_type: family %s holds plain values and cannot become a %s aggregate; create a new family for the aggregate",
			field, f.Name, f.ValueType)
	}
	return f, validFamily(f, field)
}

// impliedPaths are the fields a ColumnFamily without an update mask sets:
// its GC rule, and its value type if given (as Bigtable's older clients
// send an update).
func impliedPaths(cf *btapb.ColumnFamily) []string {
	if cf.GetValueType() != nil {
		return []string{"gc_rule", "value_type"}
	}
	return []string{"gc_rule"}
}

// setFields sets the fields of f that paths name to cf's.
func setFields(f *families.Family, cf *btapb.ColumnFamily, paths []string, field string) error {
	for _, p := range paths {
		switch p {
		case "gc_rule":
			rule, err := gcRule(cf.GetGcRule(), field+".gc_rule", 1)
			if err != nil {
				return err
			}
			f.MaxVersions, f.TTL, f.GC, f.GCRule = 0, 0, families.GCUnion, rule
		case "value_type":
			f.ValueType, f.DeclaredType = families.Bytes, "" // unset: plain bytes
			if cf.GetValueType() != nil {
				var err error
				if f.ValueType, f.DeclaredType, err = valueType(cf.GetValueType(), field+".value_type"); err != nil {
					return err
				}
			}
		default:
			return invalidf("%s.update_mask: %q cannot be updated; name gc_rule, value_type or both", field, p)
		}
	}
	return nil
}

func validFamily(f families.Family, field string) error {
	if err := f.Validate(); err != nil {
		return invalidf("%s: %s", field, trimInvalid(err))
	}
	return nil
}

// gcRule converts a Bigtable GcRule. An empty rule means none (nil); empty
// rules inside a union or intersection are dropped, as the Go client drops
// them. max_age must be at least a millisecond and is truncated to
// microseconds, as Bigtable does.
func gcRule(r *btapb.GcRule, field string, depth int) (*families.GCRule, error) {
	if depth > families.MaxGCRuleDepth {
		return nil, invalidf("%s: GC rules nest deeper than %d levels", field, families.MaxGCRuleDepth)
	}
	children := func(rs []*btapb.GcRule, kind string) ([]*families.GCRule, error) {
		var out []*families.GCRule
		for _, c := range rs {
			cr, err := gcRule(c, field+"."+kind, depth+1)
			if err != nil {
				return nil, err
			}
			if cr != nil {
				out = append(out, cr)
			}
		}
		return out, nil
	}
	switch x := r.GetRule().(type) {
	case nil:
		return nil, nil
	case *btapb.GcRule_MaxNumVersions:
		if x.MaxNumVersions < 1 {
			return nil, invalidf("%s.max_num_versions must be >= 1, got %d", field, x.MaxNumVersions)
		}
		return families.MaxVersionsRule(int(x.MaxNumVersions)), nil
	case *btapb.GcRule_MaxAge:
		d := x.MaxAge.AsDuration().Truncate(time.Microsecond)
		if d < time.Millisecond {
			return nil, invalidf("%s.max_age must be at least 1ms, got %v", field, x.MaxAge.AsDuration())
		}
		return families.MaxAgeRule(d), nil
	case *btapb.GcRule_Union_:
		rs, err := children(x.Union.GetRules(), "union")
		return families.UnionRule(rs...), err
	case *btapb.GcRule_Intersection_:
		rs, err := children(x.Intersection.GetRules(), "intersection")
		return families.IntersectionRule(rs...), err
	}
	return nil, invalidf("%s: unknown GC rule %T", field, r.GetRule())
}

// valueType converts a Bigtable value type: plain bytes, an aggregate of
// int64 (big-endian) by sum, min or max, or any other type, which a plain
// family keeps as declared (the serialized Type) without reading it.
func valueType(t *btapb.Type, field string) (vt families.ValueType, declared string, err error) {
	switch t.GetKind().(type) {
	case nil:
		return 0, "", invalidf("%s: set a type (kind)", field)
	case *btapb.Type_BytesType:
		return families.Bytes, "", nil
	case *btapb.Type_AggregateType:
		vt, err := aggregateType(t, field)
		return vt, "", err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	if err != nil {
		return 0, "", invalidf("%s: %v", field, err)
	}
	if len(b) > families.MaxDeclaredTypeLen {
		return 0, "", invalidf("%s: the %s type is %d bytes serialized, over Tabula's limit of %d", field, typeName(t), len(b), families.MaxDeclaredTypeLen)
	}
	return families.Bytes, string(b), nil
}

// aggregateType converts an aggregate of int64 by sum, min or max.
func aggregateType(t *btapb.Type, field string) (families.ValueType, error) {
	switch k := t.GetKind().(type) {
	case *btapb.Type_AggregateType:
		agg := k.AggregateType
		if agg.GetInputType().GetInt64Type() == nil {
			return 0, invalidf("%s.aggregate_type.input_type must be int64", field)
		}
		if e := agg.GetInputType().GetInt64Type().GetEncoding(); e != nil && e.GetBigEndianBytes() == nil {
			return 0, invalidf("%s.aggregate_type.input_type: only the big-endian int64 encoding is supported", field)
		}
		switch agg.GetAggregator().(type) {
		case *btapb.Type_Aggregate_Sum_:
			return families.Sum, nil
		case *btapb.Type_Aggregate_Min_:
			return families.Min, nil
		case *btapb.Type_Aggregate_Max_:
			return families.Max, nil
		case *btapb.Type_Aggregate_HllppUniqueCount:
			return 0, unimplemented(field+": HyperLogLog++ aggregates", "Tabula aggregates int64 by sum, min or max")
		}
		return 0, invalidf("%s.aggregate_type: set an aggregator (sum, min or max)", field)
	}
	return 0, invalidf("%s: %s is not an aggregate", field, typeName(t))
}

func typeName(t *btapb.Type) string {
	if t.GetKind() == nil {
		return "(unset)"
	}
	return string(t.ProtoReflect().WhichOneof(t.ProtoReflect().Descriptor().Oneofs().ByName("kind")).Name())
}
