package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
)

// fakeNamespaces is a namespace list a test changes as the master would:
// names, an error to answer, and an optional gate that holds each read
// until released (or the reader's context ends); a held read answers
// the names as they were when it began.
type fakeNamespaces struct {
	mu      sync.Mutex
	names   []string
	err     error
	reads   int
	reading chan struct{} // if set, each read sends on it once begun
	release chan struct{} // if set, each read waits for it
}

func (f *fakeNamespaces) list(ctx context.Context) ([]string, error) {
	f.mu.Lock()
	f.reads++
	reading, release := f.reading, f.release
	names, err := append([]string(nil), f.names...), f.err
	f.mu.Unlock()
	if reading != nil {
		reading <- struct{}{}
	}
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return names, err
}

func (f *fakeNamespaces) set(names []string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names, f.err = names, err
}

func (f *fakeNamespaces) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// waitFor waits (bounded by ctx) until the number of calls that waited
// for a read in flight reaches want.
func waitFor(ctx context.Context, t *testing.T, n *namespaces, want int) {
	t.Helper()
	for {
		n.mu.Lock()
		got := n.waits
		n.mu.Unlock()
		if got >= want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d calls wait for the read in flight, want %d", got, want)
		case <-time.After(time.Millisecond):
		}
	}
}

func inst(id string) instanceName { return instanceName{project: "p", instance: id} }

// TestInstancesMapToNamespaces (the default mode, InstancesAny): an
// instance is its namespace once that exists, seen by a miss once the
// cache is anyMissAge old, at once after this gateway's own
// CreateInstance; any other id, "default" and the gateway's instance id
// are the default namespace; a table id with a ':' cannot reach another
// instance's tables.
func TestInstancesMapToNamespaces(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	f := &fakeNamespaces{names: []string{"default", "a"}}
	n := &namespaces{defaultID: "tabula", now: func() time.Time { return now }, list: f.list, missWait: time.Hour}
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
	if f.count() != 1 {
		t.Fatalf("%d reads of the namespaces, want 1 (the rest from the cache)", f.count())
	}
	f.set([]string{"default", "a", "b", "tabula"}, nil)
	now = now.Add(anyMissAge - time.Millisecond)
	want("b", "t") // created elsewhere, within anyMissAge of the last read: not seen yet
	now = now.Add(time.Millisecond)
	want("b", "b:t") // the miss read again first
	if f.count() != 2 {
		t.Fatalf("%d reads of the namespaces, want 2", f.count())
	}
	want("tabula", "t")
	n.set("c", true) // this gateway's CreateInstance
	want("c", "c:t")
	n.set("c", false)
	want("c", "t")

	// No master: the cache read before answers (a namespace cannot be
	// made without one), and the read is tried again only after
	// failedReadAge.
	now = now.Add(anyMissAge)
	f.set(nil, status.Error(codes.Unavailable, "no master"))
	reads := f.count()
	want("zz", "t")
	want("b", "b:t")
	now = now.Add(failedReadAge - time.Millisecond)
	want("zz", "t")
	if got := f.count() - reads; got != 1 {
		t.Fatalf("%d reads of the namespaces while the master is away, want 1 (then one each %v)", got, failedReadAge)
	}
	now = now.Add(time.Millisecond)
	want("zz", "t")
	if got := f.count() - reads; got != 2 {
		t.Fatalf("%d reads of the namespaces %v after a failed one, want 2", got, failedReadAge)
	}
	// Nothing read yet and no master: a miss cannot be answered.
	s.ns = &namespaces{defaultID: "tabula", now: func() time.Time { return now }, list: f.list, missWait: time.Hour}
	if _, err := s.parseTable(ctx, "name", "projects/p/instances/zz/tables/t"); status.Code(err) != codes.Unavailable {
		t.Fatalf("a miss before the namespaces were ever read: %v, want UNAVAILABLE (never a guess)", err)
	}
	f.set(nil, status.Error(codes.Unimplemented, "an old master"))
	want("zz", "t")

	_, err := s.parseTable(ctx, "name", "projects/p/instances/x/tables/a:t")
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a table id naming a namespace: %v, want INVALID_ARGUMENT", err)
	}
}

// TestNamespaceReadInFlight (the default mode): while one caller reads
// the namespaces again, a known instance answers at once, a miss waits
// for that read (so it sees a namespace the read finds), and a miss that
// would wait longer than missWait answers from the cache: a master that
// is slow or gone delays a data call by at most missWait.
func TestNamespaceReadInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Unix(1000, 0)
	f := &fakeNamespaces{names: []string{"a"}}
	n := &namespaces{defaultID: "tabula", now: func() time.Time { return now }, list: f.list, missWait: time.Hour}
	if ns, err := n.of(ctx, inst("a")); ns != "a" || err != nil {
		t.Fatalf("a: %q, %v", ns, err)
	}
	now = now.Add(anyMissAge)
	f.mu.Lock()
	f.reading, f.release = make(chan struct{}), make(chan struct{})
	f.names = []string{"a", "b"}
	f.mu.Unlock()
	first := make(chan string)
	go func() {
		ns, _ := n.of(ctx, inst("b")) // a miss on an old cache: reads again, held
		first <- ns
	}()
	<-f.reading
	if ns, err := n.of(ctx, inst("a")); ns != "a" || err != nil {
		t.Fatalf("a known instance while another caller reads: %q, %v", ns, err)
	}
	second := make(chan string)
	go func() {
		ns, _ := n.of(ctx, inst("b"))
		second <- ns
	}()
	waitFor(ctx, t, n, 1)
	n.mu.Lock()
	n.missWait = 0 // a master that does not answer
	n.mu.Unlock()
	if ns, err := n.of(ctx, inst("zz")); ns != "default" || err != nil {
		t.Fatalf("a miss past missWait: %q, %v; want default", ns, err)
	}
	close(f.release)
	if ns := <-first; ns != "b" {
		t.Fatalf("the reader's own answer: %q, want b", ns)
	}
	if ns := <-second; ns != "b" {
		t.Fatalf("the answer of a miss that waited for the read: %q, want b", ns)
	}
}

// TestStrictInstances (InstancesNamespaces): an instance that is neither
// the default one nor an existing namespace is NOT_FOUND; every miss reads
// the namespaces again first, so a namespace created between two calls is
// seen by the second, even while a read that began before it is in
// flight; with no master the names known answer and misses are
// UNAVAILABLE; a miss waits no longer than its context.
func TestStrictInstances(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Unix(1000, 0) // never moves: strict mode needs no clock
	f := &fakeNamespaces{names: []string{"default", "a"}}
	n := &namespaces{defaultID: "tabula", strict: true, now: func() time.Time { return now }, list: f.list}
	s := &Server{ns: n}
	check := func(instance, table string, code codes.Code) {
		t.Helper()
		got, err := s.parseTable(ctx, "name", "projects/p/instances/"+instance+"/tables/t")
		if status.Code(err) != code || (code == codes.OK && got.table != table) {
			t.Fatalf("instance %s: %q, %v; want table %q, code %v", instance, got.table, err, table, code)
		}
		if code == codes.NotFound && !strings.Contains(status.Convert(err).Message(), "instance projects/p/instances/"+instance+" not found") {
			t.Fatalf("instance %s: %v; want Cloud Bigtable's words", instance, err)
		}
	}
	check("a", "a:t", codes.OK)
	check("default", "t", codes.OK)
	check("tabula", "t", codes.OK)
	check("{{instance}}", "", codes.NotFound)
	check("b", "", codes.NotFound)
	check("b", "", codes.NotFound)
	if f.count() != 3 {
		t.Fatalf("%d reads, want 3: the first and one per miss", f.count())
	}
	f.set([]string{"default", "a", "b"}, nil) // created elsewhere
	check("b", "b:t", codes.OK)               // the very next call sees it

	// A read that began before the namespace was made does not answer a
	// call that came after: that call waits for it and reads again.
	f.mu.Lock()
	f.reading, f.release = make(chan struct{}, 2), make(chan struct{})
	f.mu.Unlock()
	firstErr := make(chan error)
	go func() {
		_, err := n.of(ctx, inst("c"))
		firstErr <- err
	}()
	<-f.reading
	// The read in flight has listed the namespaces as they were; then c is
	// created, and a second call arrives.
	f.mu.Lock()
	f.names = []string{"default", "a", "b", "c"}
	held := f.release
	f.release = nil
	f.mu.Unlock()
	secondNS := make(chan string)
	go func() {
		ns, _ := n.of(ctx, inst("c"))
		secondNS <- ns
	}()
	waitFor(ctx, t, n, 1)
	close(held) // it answers what it listed before c was made
	if err := <-firstErr; status.Code(err) != codes.NotFound {
		t.Fatalf("the call that began before c existed: %v, want NOT_FOUND", err)
	}
	if ns := <-secondNS; ns != "c" {
		t.Fatalf("the call that began after c was made: %q, want c (never NOT_FOUND, never default)", ns)
	}

	// No master: known names answer, misses are UNAVAILABLE.
	f.set(nil, status.Error(codes.Unavailable, "no master"))
	check("a", "a:t", codes.OK)
	check("zz", "", codes.Unavailable)

	// A slow master: the miss waits no longer than its context.
	f.set([]string{"a"}, nil)
	f.mu.Lock()
	f.reading, f.release = make(chan struct{}, 1), make(chan struct{})
	f.mu.Unlock()
	short, stop := context.WithCancel(ctx)
	go func() { <-f.reading; stop() }()
	if _, err := n.of(short, inst("slow")); status.Code(err) != codes.Canceled {
		t.Fatalf("a miss whose context ends during the read: %v, want CANCELED", err)
	}
}

// TestStrictInstanceAdmin: in strict mode GetInstance and ListTables of an
// instance that is not a namespace are NOT_FOUND, as Cloud Bigtable
// answers them.
func TestStrictInstanceAdmin(t *testing.T) {
	ctx := context.Background()
	f := &fakeNamespaces{names: []string{"default", "a"}}
	s := &Server{ns: &namespaces{defaultID: "tabula", strict: true, now: time.Now, list: f.list}}
	s.instance = instanceServer{s: s}
	s.admin = adminServer{s: s}
	if _, err := s.instance.GetInstance(ctx, &btapb.GetInstanceRequest{Name: "projects/p/instances/nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetInstance of no namespace: %v, want NOT_FOUND", err)
	}
	if in, err := s.instance.GetInstance(ctx, &btapb.GetInstanceRequest{Name: "projects/p/instances/a"}); err != nil || in.GetName() != "projects/p/instances/a" {
		t.Fatalf("GetInstance of a namespace: %v, %v", in, err)
	}
	if _, err := s.admin.ListTables(ctx, &btapb.ListTablesRequest{Parent: "projects/p/instances/nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("ListTables of no namespace: %v, want NOT_FOUND", err)
	}
}

func TestParseInstanceMode(t *testing.T) {
	for in, want := range map[string]InstanceMode{"": InstancesAny, "any": InstancesAny, "namespaces": InstancesNamespaces} {
		if got, err := ParseInstanceMode(in); got != want || err != nil {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseInstanceMode("strict"); err == nil {
		t.Error(`"strict" parsed`)
	}
}
