package client

import (
	"reflect"
	"testing"
)

// TestAdminConcernsCoverEveryMethod holds the AdminClient's map of
// concerns to the code: each exported method is in exactly one of
// TableAdmin, FamilyAdmin, ClusterAdmin and SecurityAdmin, so a new admin
// call cannot be added without deciding where it belongs.
func TestAdminConcernsCoverEveryMethod(t *testing.T) {
	concerns := []reflect.Type{
		reflect.TypeFor[TableAdmin](),
		reflect.TypeFor[FamilyAdmin](),
		reflect.TypeFor[ClusterAdmin](),
		reflect.TypeFor[SecurityAdmin](),
		reflect.TypeFor[NamespaceAdmin](),
		reflect.TypeFor[QuotaAdmin](),
		reflect.TypeFor[SnapshotAdmin](),
		reflect.TypeFor[BackupAdmin](),
	}
	in := map[string][]string{}
	for _, c := range concerns {
		for i := range c.NumMethod() {
			m := c.Method(i).Name
			in[m] = append(in[m], c.Name())
		}
	}
	admin := reflect.TypeFor[*AdminClient]()
	for i := range admin.NumMethod() {
		m := admin.Method(i).Name
		if len(in[m]) != 1 {
			t.Errorf("AdminClient.%s is in %d concerns %v, want exactly one", m, len(in[m]), in[m])
		}
		delete(in, m)
	}
	for m, cs := range in {
		t.Errorf("%v declare %s, which AdminClient lacks", cs, m)
	}
}
