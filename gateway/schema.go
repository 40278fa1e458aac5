package gateway

import (
	"time"

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
	t.ColumnFamilies = map[string]*btapb.ColumnFamily{}
	for i := range info.Families {
		f := &info.Families[i]
		t.ColumnFamilies[f.Name] = protoFamily(f)
	}
	if view == btapb.Table_REPLICATION_VIEW || view == btapb.Table_FULL {
		// One cluster, strongly consistent: always ready.
		t.ClusterStates = map[string]*btapb.Table_ClusterState{
			s.opts.ClusterID: {ReplicationState: btapb.Table_ClusterState_READY},
		}
	}
	return t
}

// protoFamily describes a family's GC policy as a Bigtable GcRule: no rule
// is an empty GcRule (keep everything), as Bigtable answers.
func protoFamily(f *families.Family) *btapb.ColumnFamily {
	cf := &btapb.ColumnFamily{GcRule: &btapb.GcRule{}}
	var rules []*btapb.GcRule
	if f.MaxVersions > 0 {
		rules = append(rules, &btapb.GcRule{Rule: &btapb.GcRule_MaxNumVersions{MaxNumVersions: int32(f.MaxVersions)}})
	}
	if f.TTL > 0 {
		rules = append(rules, &btapb.GcRule{Rule: &btapb.GcRule_MaxAge{MaxAge: durationpb.New(f.TTL)}})
	}
	switch {
	case len(rules) == 1:
		cf.GcRule = rules[0]
	case len(rules) == 2 && f.GC == families.GCIntersection:
		cf.GcRule = &btapb.GcRule{Rule: &btapb.GcRule_Intersection_{Intersection: &btapb.GcRule_Intersection{Rules: rules}}}
	case len(rules) == 2:
		cf.GcRule = &btapb.GcRule{Rule: &btapb.GcRule_Union_{Union: &btapb.GcRule_Union{Rules: rules}}}
	}
	return cf
}

// familyFrom builds a family from a Bigtable ColumnFamily, keeping base's
// storage settings (compression, bloom, block size); a new family gets the
// admin API's defaults.
func familyFrom(name string, cf *btapb.ColumnFamily, base families.Family, field string) (families.Family, error) {
	f := base
	f.Name = name
	f.MaxVersions, f.TTL, f.GC = 0, 0, families.GCUnion
	if err := applyRule(&f, cf.GetGcRule(), field+".gc_rule"); err != nil {
		return f, err
	}
	if cf.GetValueType() != nil {
		return f, unimplemented(field+".value_type", "aggregate families are not yet in Tabula's engine")
	}
	if err := f.Validate(); err != nil {
		return f, invalidf("%s: %s", field, trimInvalid(err))
	}
	return f, nil
}

// applyRule sets f's GC policy from a GcRule.
func applyRule(f *families.Family, r *btapb.GcRule, field string) error {
	switch x := r.GetRule().(type) {
	case nil:
		return nil
	case *btapb.GcRule_MaxNumVersions:
		if x.MaxNumVersions < 1 {
			return invalidf("%s.max_num_versions must be >= 1, got %d", field, x.MaxNumVersions)
		}
		f.MaxVersions = int(x.MaxNumVersions)
		return nil
	case *btapb.GcRule_MaxAge:
		d := x.MaxAge.AsDuration()
		if d <= 0 || d%time.Millisecond != 0 {
			return invalidf("%s.max_age must be a positive whole number of milliseconds, got %v", field, d)
		}
		f.TTL = d
		return nil
	case *btapb.GcRule_Union_:
		return applyPair(f, x.Union.GetRules(), families.GCUnion, field+".union")
	case *btapb.GcRule_Intersection_:
		return applyPair(f, x.Intersection.GetRules(), families.GCIntersection, field+".intersection")
	}
	return invalidf("%s: unknown GC rule %T", field, r.GetRule())
}

func applyPair(f *families.Family, rules []*btapb.GcRule, mode families.GCMode, field string) error {
	var versions, age int
	for _, r := range rules {
		switch r.GetRule().(type) {
		case *btapb.GcRule_MaxNumVersions:
			versions++
		case *btapb.GcRule_MaxAge:
			age++
		default:
			return unimplemented(field+" with nested rules", "not yet in Tabula's families")
		}
	}
	if versions > 1 || age > 1 {
		return unimplemented(field+" with two rules of one kind", "not yet in Tabula's families")
	}
	f.GC = mode
	for i, r := range rules {
		if err := applyRule(f, r, field); err != nil {
			return err
		}
		_ = i
	}
	return nil
}
