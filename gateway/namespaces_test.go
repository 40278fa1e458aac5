package gateway

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestInstancesMapToNamespaces: an instance is its namespace once that
// exists (seen within the cache's ttl, at once after this gateway's own
// CreateInstance); any other id, "default" and the gateway's instance id
// are the default namespace; a table id with a ':' cannot reach another
// instance's tables.
func TestInstancesMapToNamespaces(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	existing := []string{"default", "a"}
	var listErr error
	lists := 0
	n := &namespaces{defaultID: "tabula", ttl: time.Second, now: func() time.Time { return now },
		list: func(context.Context) ([]string, error) { lists++; return existing, listErr }}
	s := &Server{ns: n}
	want := func(instance, table string) {
		t.Helper()
		got, err := s.parseTable(ctx, "name", "projects/p/instances/"+instance+"/tables/t")
		if err != nil || got.table != table || got.String() != "projects/p/instances/"+instance+"/tables/t" {
			t.Fatalf("instance %s: %+v, %v; want table %s", instance, got, err, table)
		}
	}
	want("a", "a:t")
	want("b", "t")
	want("default", "t")
	want("tabula", "t")
	want("{{instance}}", "t")
	if lists != 1 {
		t.Fatalf("%d reads of the namespaces, want 1 (the rest from the cache)", lists)
	}
	existing = append(existing, "b", "tabula")
	want("b", "t") // created elsewhere, within ttl: not seen yet
	now = now.Add(time.Second)
	want("b", "b:t")
	want("tabula", "t")
	n.set("c", true) // this gateway's CreateInstance
	want("c", "c:t")
	n.set("c", false)
	want("c", "t")

	now = now.Add(time.Second)
	listErr = status.Error(codes.Unavailable, "no master")
	if _, err := s.parseTable(ctx, "name", "projects/p/instances/zz/tables/t"); status.Code(err) != codes.Unavailable {
		t.Fatalf("a miss while the namespaces cannot be read: %v, want UNAVAILABLE (never a guess)", err)
	}
	listErr = status.Error(codes.Unimplemented, "an old master")
	want("zz", "t")

	_, err := s.parseTable(ctx, "name", "projects/p/instances/x/tables/a:t")
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a table id naming a namespace: %v, want INVALID_ARGUMENT", err)
	}
}
