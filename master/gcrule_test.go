package master

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
)

// A nested GC rule is stored in etcd, described, changed by ModifyFamily
// and pushed to the tablet servers, and can be switched back to the simple
// form.
func TestNestedGCRuleIsStoredChangedAndPushed(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	rule := func(spec string) *tabulapb.GCRule {
		r, err := families.ParseGCRule(spec)
		if err != nil {
			t.Fatal(err)
		}
		return convert.GCRuleToProto(r)
	}
	lastPushed := func() *tabulapb.Family {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		if len(s1.schemas) == 0 {
			return nil
		}
		return s1.schemas[len(s1.schemas)-1].GetFamilies()[0]
	}
	stored := func() *tabulapb.Family {
		rec, _, err := meta.GetTable(ctx, c.cli, c.layout, "t")
		if err != nil {
			t.Fatal(err)
		}
		return rec.Schema.GetFamilies()[0]
	}

	r1 := rule("union(versions=3,intersection(age=7d,versions=1),intersection())")
	s := &tabulapb.TableSchema{Name: "t", Families: []*tabulapb.Family{{Name: "a", GcRule: r1}}}
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: s}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 1, s1)
	desc, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "t"})
	if err != nil || !proto.Equal(desc.GetSchema().GetFamilies()[0].GetGcRule(), r1) {
		t.Fatalf("described rule %v, %v; want %v", desc.GetSchema().GetFamilies()[0].GetGcRule(), err, r1)
	}
	if got := stored().GetGcRule(); !proto.Equal(got, r1) {
		t.Fatalf("etcd holds rule %v, want %v", got, r1)
	}

	r2 := rule("intersection(age=1h,union(versions=2,age=2d))")
	if _, err := mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "a", GcRule: r2}}); err != nil {
		t.Fatal(err)
	}
	if got := lastPushed().GetGcRule(); !proto.Equal(got, r2) {
		t.Fatalf("UpdateSchema after ModifyFamily carried rule %v, want %v", got, r2)
	}
	if got := stored().GetGcRule(); !proto.Equal(got, r2) {
		t.Fatalf("etcd holds rule %v, want %v", got, r2)
	}
	// The decoded family evaluates the new rule.
	f, err := convert.FamilyFromProto(stored())
	if err != nil || f.GCRule.String() != "intersection(age=1h,union(versions=2,age=2d))" {
		t.Fatalf("stored family %s, %v", f.Spec(), err)
	}

	_, err = mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "a", MaxVersions: 2, GcRule: r2}})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "use one")
	_, err = mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "a", GcRule: &tabulapb.GCRule{}}})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "no rule set")

	if _, err := mc.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "a", MaxVersions: 2, TtlMicros: time.Hour.Microseconds()}}); err != nil {
		t.Fatal(err)
	}
	if p := lastPushed(); p.GetGcRule() != nil || p.GetMaxVersions() != 2 {
		t.Fatalf("back to the simple form, the server got %v", p)
	}
	if p := stored(); p.GetGcRule() != nil || p.GetMaxVersions() != 2 {
		t.Fatalf("back to the simple form, etcd holds %v", p)
	}
}

// A schema stored before gc_rule existed loads unchanged, and one with a
// rule survives the etcd encoding.
func TestSchemaEncodingKeepsGCRule(t *testing.T) {
	old := []byte(`{"name":"t","families":[{"name":"a","maxVersions":3,"ttlMicros":"60000000","gc":"GC_INTERSECTION","compression":"COMPRESSION_SNAPPY","bloom":"BLOOM_ROW"}],"state":"enabled"}`)
	rec, err := meta.DecodeTable(old)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := convert.FamiliesFromProto(rec.Schema.GetFamilies())
	if err != nil {
		t.Fatal(err)
	}
	want := families.Family{Name: "a", MaxVersions: 3, TTL: time.Minute, GC: families.GCIntersection,
		Compression: families.CompressionSnappy, Bloom: families.BloomRow}
	if !fams[0].Equal(want) {
		t.Fatalf("old schema loads as %+v, want %+v", fams[0], want)
	}

	r, _ := families.ParseGCRule("union(versions=3,intersection(age=7d,versions=1))")
	s, err := checkSchema(&tabulapb.TableSchema{Name: "t", Families: convert.FamiliesToProto([]families.Family{{Name: "a", GCRule: r}})})
	if err != nil {
		t.Fatal(err)
	}
	back, err := meta.DecodeTable([]byte(meta.EncodeTable(meta.TableRecord{Schema: s})))
	if err != nil {
		t.Fatal(err)
	}
	fams, err = convert.FamiliesFromProto(back.Schema.GetFamilies())
	if err != nil || !fams[0].GCRule.Equal(r) {
		t.Fatalf("rule after etcd encoding: %v, %v; want %v", fams[0].GCRule, err, r)
	}
}
