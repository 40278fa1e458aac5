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

	// No master: the cache read before answers (a namespace cannot be
	// made without one), and the read is tried again only after ttl.
	now = now.Add(time.Second)
	listErr = status.Error(codes.Unavailable, "no master")
	lists = 0
	want("zz", "t")
	want("b", "b:t")
	want("zz", "t")
	if lists != 1 {
		t.Fatalf("%d reads of the namespaces while the master is away, want 1 (then one a ttl)", lists)
	}
	// Nothing read yet and no master: a miss cannot be answered.
	s.ns = &namespaces{defaultID: "tabula", ttl: time.Second, now: func() time.Time { return now },
		list: func(context.Context) ([]string, error) { return nil, listErr }}
	if _, err := s.parseTable(ctx, "name", "projects/p/instances/zz/tables/t"); status.Code(err) != codes.Unavailable {
		t.Fatalf("a miss before the namespaces were ever read: %v, want UNAVAILABLE (never a guess)", err)
	}
	listErr = status.Error(codes.Unimplemented, "an old master")
	want("zz", "t")

	_, err := s.parseTable(ctx, "name", "projects/p/instances/x/tables/a:t")
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a table id naming a namespace: %v, want INVALID_ARGUMENT", err)
	}
}

// TestNamespaceReadStopsNoCall: while one caller reads the namespaces
// again, the others answer from what was read before, and do not wait
// for a master that is slow or gone.
func TestNamespaceReadStopsNoCall(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	reading, release := make(chan struct{}), make(chan struct{})
	first := true
	n := &namespaces{defaultID: "tabula", ttl: time.Second, now: func() time.Time { return now },
		list: func(context.Context) ([]string, error) {
			if first {
				first = false
				return []string{"a"}, nil
			}
			close(reading)
			<-release
			return []string{"a", "b"}, nil
		}}
	if ns, err := n.of(ctx, "a"); ns != "a" || err != nil {
		t.Fatalf("a: %q, %v", ns, err)
	}
	now = now.Add(time.Second)
	slow := make(chan string)
	go func() {
		ns, _ := n.of(ctx, "b") // a miss after ttl: reads again, held
		slow <- ns
	}()
	<-reading
	for _, c := range []struct{ instance, want string }{{"a", "a"}, {"b", "default"}, {"zz", "default"}} {
		if ns, err := n.of(ctx, c.instance); ns != c.want || err != nil {
			t.Fatalf("%s while another caller reads: %q, %v; want %q", c.instance, ns, err, c.want)
		}
	}
	close(release)
	if ns := <-slow; ns != "b" {
		t.Fatalf("the reader's own answer: %q, want b", ns)
	}
	if ns, _ := n.of(ctx, "b"); ns != "b" {
		t.Fatalf("b after the read: %q", ns)
	}
}
