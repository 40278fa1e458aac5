package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func alphabet() []string {
	var rows []string
	for c := 'a'; c <= 'z'; c++ {
		rows = append(rows, string(c))
	}
	return rows
}

func fill(t *testing.T, tbl *Table, rows []string) {
	t.Helper()
	for _, r := range rows {
		m := NewMutation().Set("cf", []byte("q"), 10, []byte("v"+r)).Set("cg", []byte("x"), 10, []byte("x"+r))
		if err := tbl.Apply(context.Background(), []byte(r), m); err != nil {
			t.Fatalf("Apply(%s): %v", r, err)
		}
	}
}

func keys(t *testing.T, it *RowIterator) string {
	t.Helper()
	defer it.Close()
	var ks []string
	for it.Next() {
		ks = append(ks, string(it.Row().Key))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("scan failed after %v: %v", ks, err)
	}
	return strings.Join(ks, "")
}

func TestRangeScanSpansTabletsInOrderWithLimit(t *testing.T) {
	c := newCluster(t, 3, "g", "p")
	tbl := c.client(t).Open("t")
	fill(t, tbl, alphabet())
	ctx := context.Background()
	cases := []struct {
		name string
		rs   RowSet
		opts []ReadOption
		want string
	}{
		{"whole table", nil, nil, "abcdefghijklmnopqrstuvwxyz"},
		{"range across all three", NewRange([]byte("e"), []byte("r")), nil, "efghijklmnopq"},
		{"limit across tablets", NewRange([]byte("e"), []byte("r")), []ReadOption{LimitRows(10)}, "efghijklmn"},
		{"limit inside first tablet", nil, []ReadOption{LimitRows(3)}, "abc"},
		{"limit at tablet end", nil, []ReadOption{LimitRows(7)}, "abcdefg"},
		{"key list out of order", RowList([]byte("z"), []byte("a"), []byte("h"), []byte("a"), []byte("zz")), nil, "ahz"},
		{"prefix", PrefixRange([]byte("q")), nil, "q"},
		{"infinite", InfiniteRange([]byte("x")), nil, "xyz"},
		{"union", Union(NewRange([]byte("b"), []byte("d")), SingleRow([]byte("m")), NewRange([]byte("c"), []byte("e"))), nil, "bcdm"},
		{"filter drops rows", nil, []ReadOption{WithFilter(rowfilter.RowKeyRegex("[aeiou]"))}, "aeiou"},
		{"empty range", NewRange([]byte("m"), []byte("m")), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keys(t, tbl.ReadRows(ctx, tc.rs, tc.opts...)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Every server saw reads: the scan really went to three tablets.
	for addr, s := range c.servers {
		if s.callCount("ReadRows") == 0 {
			t.Errorf("server %s never read", addr)
		}
	}
}

func TestReadRowReturnsCellsOrEmptyRow(t *testing.T) {
	c := newCluster(t, 2, "m")
	tbl := c.client(t).Open("t")
	fill(t, tbl, []string{"k", "z"})
	ctx := context.Background()
	row, err := tbl.ReadRow(ctx, []byte("z"), WithFilter(rowfilter.Family("cf")))
	if err != nil {
		t.Fatal(err)
	}
	if len(row.Cells) != 1 || string(row.Cells[0].Value) != "vz" || string(row.Cells[0].Row) != "z" {
		t.Errorf("ReadRow(z) = %+v", row)
	}
	row, err = tbl.ReadRow(ctx, []byte("absent"))
	if err != nil || string(row.Key) != "absent" || len(row.Cells) != 0 {
		t.Errorf("ReadRow(absent) = %+v, %v", row, err)
	}
	if _, err := tbl.ReadRow(ctx, []byte("k"), WithFilter(rowfilter.CellsPerRowLimit(0))); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad filter: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := c.client(t).Open("nope").ReadRow(ctx, []byte("k")); status.Code(err) != codes.NotFound {
		t.Errorf("unknown table: %v, want NOT_FOUND", err)
	}
}

func TestNotServingRelocatesAndSucceeds(t *testing.T) {
	c := newCluster(t, 2, "m")
	cl := c.client(t)
	tbl := cl.Open("t")
	fill(t, tbl, []string{"a", "b"}) // caches tablet "" on server 0
	var from, to string
	for addr, s := range c.servers {
		if _, ok := s.held["tab"]; ok {
			from = addr
		} else {
			to = addr
		}
	}
	c.move("a", to)
	before := c.servers[from].callCount("MutateRow")
	// Non-idempotent on purpose: a NotServing refusal is safe to retry.
	if err := tbl.Apply(context.Background(), []byte("a"), NewMutation().Set("cf", []byte("n"), ServerTime, []byte("1"))); err != nil {
		t.Fatalf("Apply after move: %v", err)
	}
	if got := c.servers[from].callCount("MutateRow") - before; got != 1 {
		t.Errorf("old server got %d calls, want 1 (then re-locate)", got)
	}
	if got := keys(t, tbl.ReadRows(context.Background(), NewRange(nil, []byte("m")))); got != "ab" {
		t.Errorf("read after move = %q", got)
	}
	if tab, ok := cl.loc.Cached("t", []byte("a")); !ok || tab.Address != to || tab.Epoch != 2 {
		t.Errorf("cache after re-locate: %+v, %v", tab, ok)
	}
}

func TestOnlyIdempotentMutationsRetryOnUnavailable(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	var s *fakeServer
	for _, s = range c.servers {
	}
	ctx := context.Background()
	unavailable := status.Error(codes.Unavailable, "fake: connection reset")

	s.inject("MutateRow", unavailable)
	err := tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("q"), ServerTime, []byte("v")))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("non-idempotent Apply = %v, want UNAVAILABLE", err)
	}
	if n := s.callCount("MutateRow"); n != 1 {
		t.Errorf("non-idempotent Apply sent %d times, want 1", n)
	}

	// AddToCell and MergeToCell count once per application: never retried.
	for _, m := range []*Mutation{
		NewMutation().AddToCell("cf", []byte("n"), 7, 1),
		NewMutation().Set("cf", []byte("q"), 7, []byte("v")).MergeToCell("cf", []byte("n"), 7, cell.AggregateInput(1)),
	} {
		if m.Idempotent() {
			t.Errorf("%v is idempotent", m.Mutations())
		}
		before := s.callCount("MutateRow")
		s.inject("MutateRow", unavailable)
		if err := tbl.Apply(ctx, []byte("r"), m); status.Code(err) != codes.Unavailable {
			t.Errorf("Apply(%v) = %v, want UNAVAILABLE", m.Mutations(), err)
		}
		if n := s.callCount("MutateRow") - before; n != 1 {
			t.Errorf("Apply(%v) sent %d times, want 1", m.Mutations(), n)
		}
	}

	s.inject("MutateRow", unavailable, status.Error(codes.ResourceExhausted, "fake: slow down"))
	if err := tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("q"), 7, []byte("v"))); err != nil {
		t.Errorf("idempotent Apply = %v, want success after retries", err)
	}
	if n := s.callCount("MutateRow"); n != 6 {
		t.Errorf("MutateRow calls = %d, want 6 (1 + 2 aggregates + 3 for the idempotent one)", n)
	}

	// Other errors are never retried.
	s.inject("MutateRow", status.Error(codes.InvalidArgument, "fake: bad"))
	if err := tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("q"), 7, []byte("v"))); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "fake: bad") {
		t.Errorf("Apply = %v, want the server's INVALID_ARGUMENT", err)
	}
	// Client-side validation stops bad input before the wire.
	calls := s.callCount("MutateRow")
	if err := tbl.Apply(ctx, []byte("r"), NewMutation().Set("bad family", nil, 1, nil)); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad family: %v", err)
	}
	if err := tbl.Apply(ctx, []byte("r"), NewMutation()); status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty mutation: %v", err)
	}
	for _, m := range []*Mutation{
		NewMutation().AddToCell("cf", []byte("n"), ServerTime, 1),
		NewMutation().AddToCell("cf", []byte("n"), -7, 1),
		NewMutation().MergeToCell("cf", []byte("n"), 7, []byte{1, 2, 3}),
		NewMutation().MergeToCell("cf", []byte("n"), 7, nil),
		NewMutation().AddToCell("bad family", nil, 7, 1),
	} {
		if err := tbl.Apply(ctx, []byte("r"), m); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Apply(%v) = %v, want INVALID_ARGUMENT", m.Mutations(), err)
		}
	}
	if s.callCount("MutateRow") != calls {
		t.Error("invalid mutations reached the server")
	}
}

func TestApplyBulkReportsPerRowErrors(t *testing.T) {
	c := newCluster(t, 2, "m")
	tbl := c.client(t).Open("t")
	ctx := context.Background()
	rows := [][]byte{[]byte("a"), []byte("b"), []byte("n"), []byte("o"), []byte("p"), []byte("q")}
	muts := []*Mutation{
		NewMutation().Set("cf", []byte("q"), 1, []byte("1")),
		NewMutation().Set("nofam", []byte("q"), 1, []byte("1")), // server: NOT_FOUND
		NewMutation().Set("cf", []byte("q"), 1, []byte("1")),
		NewMutation().Set("bad fam", nil, 1, nil), // client: INVALID_ARGUMENT
		NewMutation().Set("cf", []byte("q"), ServerTime, []byte("1")),
		NewMutation().DeleteRow(),
	}
	// The second server answers the first entry it sees with NotServing.
	for _, s := range c.servers {
		if _, ok := s.held["tabm"]; ok {
			s.inject("MutateRows.entry", notServing(nil, nil))
		}
	}
	errs, err := tbl.ApplyBulk(ctx, rows, muts)
	if err != nil {
		t.Fatal(err)
	}
	want := []codes.Code{codes.OK, codes.NotFound, codes.OK, codes.InvalidArgument, codes.OK, codes.OK}
	for i, w := range want {
		if got := status.Code(errs[i]); got != w {
			t.Errorf("row %s: %v, want %v", rows[i], errs[i], w)
		}
	}
	if got := keys(t, tbl.ReadRows(ctx, nil)); got != "anp" {
		t.Errorf("rows after bulk = %q, want anp", got)
	}
	if _, err := tbl.ApplyBulk(ctx, rows, muts[:2]); status.Code(err) != codes.InvalidArgument {
		t.Errorf("mismatched lengths: %v", err)
	}
}

func TestApplyBulkDoesNotRetryNonIdempotentOnUnavailable(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	var s *fakeServer
	for _, s = range c.servers {
	}
	u := status.Error(codes.Unavailable, "fake: overloaded")
	s.inject("MutateRows.entry", u, u)
	errs, err := tbl.ApplyBulk(context.Background(), [][]byte{[]byte("a"), []byte("b")}, []*Mutation{
		NewMutation().Set("cf", nil, ServerTime, nil),
		NewMutation().Set("cf", nil, 3, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if status.Code(errs[0]) != codes.Unavailable || errs[1] != nil {
		t.Errorf("errs = %v, want [UNAVAILABLE, nil]", errs)
	}
	if n := s.callCount("MutateRows.entry"); n != 3 {
		t.Errorf("entries sent %d times, want 3 (b retried once)", n)
	}
}

func TestScanResumesAfterLastRowWhenStreamBreaks(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	fill(t, tbl, alphabet())
	var s *fakeServer
	for _, s = range c.servers {
	}
	s.mu.Lock()
	s.failAfter = 5
	s.mu.Unlock()
	if got := keys(t, tbl.ReadRows(context.Background(), nil, LimitRows(20))); got != "abcdefghijklmnopqrst" {
		t.Errorf("scan = %q", got)
	}
	if n := s.callCount("ReadRows"); n != 2 {
		t.Errorf("ReadRows calls = %d, want 2 (one resume)", n)
	}
}

// Rows sent in parts (larger than a message) read back whole, also when
// the stream breaks and the scan resumes.
func TestScanJoinsRowsSentInParts(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	ctx := context.Background()
	big := bytes.Repeat([]byte("v"), 40<<10)
	for _, k := range []string{"a", "b", "c", "d"} {
		m := NewMutation().Set("cf", []byte("x"), 1, big).Set("cf", []byte("y"), 1, []byte(k))
		if err := tbl.Apply(ctx, []byte(k), m); err != nil {
			t.Fatal(err)
		}
	}
	var s *fakeServer
	for _, s = range c.servers {
	}
	s.mu.Lock()
	s.partBudget, s.failAfter = 16<<10, 2
	s.mu.Unlock()
	it := tbl.ReadRows(ctx, nil)
	defer it.Close()
	var got string
	for it.Next() {
		r := it.Row()
		if len(r.Cells) != 2 || !bytes.Equal(r.Cells[0].Value, big) || string(r.Cells[1].Value) != string(r.Key) {
			t.Fatalf("row %s came back as %d cells", r.Key, len(r.Cells))
		}
		got += string(r.Key)
	}
	if err := it.Err(); err != nil || got != "abcd" {
		t.Fatalf("scan = %q, %v", got, err)
	}
}

func TestCheckAndMutateAndReadModifyWrite(t *testing.T) {
	c := newCluster(t, 2, "m")
	tbl := c.client(t).Open("t")
	ctx := context.Background()
	row := []byte("x")
	matched, err := tbl.CheckAndMutate(ctx, row, rowfilter.Family("cf"),
		NewMutation().Set("cf", []byte("t"), 1, []byte("true")),
		NewMutation().Set("cf", []byte("f"), 1, []byte("false")))
	if err != nil || matched {
		t.Fatalf("first CheckAndMutate = %v, %v; want false", matched, err)
	}
	matched, err = tbl.CheckAndMutate(ctx, row, rowfilter.Chain(rowfilter.Family("cf"), rowfilter.ValueRegex("false")),
		NewMutation().Set("cf", []byte("t"), 1, []byte("true")), nil)
	if err != nil || !matched {
		t.Fatalf("second CheckAndMutate = %v, %v; want true", matched, err)
	}
	got, _ := tbl.ReadRow(ctx, row)
	if len(got.Cells) != 2 {
		t.Errorf("row after check-and-mutate: %+v", got.Cells)
	}

	r, err := tbl.ReadModifyWrite(ctx, row, NewReadModifyWrite().Increment("cg", []byte("n"), 5).Append("cg", []byte("s"), []byte("ab")))
	if err != nil {
		t.Fatal(err)
	}
	r, err = tbl.ReadModifyWrite(ctx, row, NewReadModifyWrite().Increment("cg", []byte("n"), -2).Append("cg", []byte("s"), []byte("cd")))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 2 || int64(binary.BigEndian.Uint64(r.Cells[0].Value)) != 3 || string(r.Cells[1].Value) != "abcd" {
		t.Errorf("ReadModifyWrite = %+v", r)
	}
	if _, err := tbl.ReadModifyWrite(ctx, row, NewReadModifyWrite()); status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty rules: %v", err)
	}
	// Not retried on UNAVAILABLE: the increment may have happened.
	for _, s := range c.servers {
		s.inject("ReadModifyWriteRow", status.Error(codes.Unavailable, "fake"))
	}
	if _, err := tbl.ReadModifyWrite(ctx, row, NewReadModifyWrite().Increment("cg", []byte("n"), 1)); status.Code(err) != codes.Unavailable {
		t.Errorf("ReadModifyWrite after UNAVAILABLE: %v", err)
	}
}

// TestContextCancelStopsCalls: a call blocked on a server ends when its
// context is cancelled, and retries of a failing server end when the
// deadline passes, naming the last error. The context ends at points of
// the test's choosing (the server holds the scan; the client waits
// between two retries), never at a time the machine's pace could beat.
func TestContextCancelStopsCalls(t *testing.T) {
	c := newCluster(t, 1)
	cl := c.client(t)
	tbl := cl.Open("t")
	var s *fakeServer
	for _, s = range c.servers {
	}
	fill(t, tbl, []string{"a"})
	hang := make(chan struct{})
	s.mu.Lock()
	s.hang = hang
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.hungCalls: // the server holds the scan
		case <-time.After(waitLimit):
			t.Errorf("the scan did not reach the server within %v", waitLimit)
		}
		cancel()
	}()
	it := tbl.ReadRows(ctx, nil)
	if it.Next() {
		t.Fatal("got a row from a blocked server")
	}
	if status.Code(it.Err()) != codes.Canceled {
		t.Errorf("scan err = %v, want CANCELED", it.Err())
	}
	it.Close()
	s.mu.Lock()
	s.hang = nil
	s.mu.Unlock()
	close(hang)

	// A server that keeps failing: retries end at the deadline. The
	// deadline passes while the client backs off after its third failed
	// attempt.
	for i := 0; i < 1000; i++ {
		s.inject("MutateRow", status.Error(codes.Unavailable, "fake: down"))
	}
	before := s.callCount("MutateRow")
	dctx := newDeadline()
	cl.backoff = func(ctx context.Context, attempt int) error {
		if attempt == 2 {
			dctx.pass()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return cl.opts.Backoff.Wait(ctx, attempt)
	}
	done := make(chan error, 1)
	go func() { done <- tbl.Apply(dctx, []byte("a"), NewMutation().Set("cf", nil, 1, nil)) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(waitLimit):
		t.Fatalf("Apply still retrying %v after its deadline", waitLimit)
	}
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "fake: down") {
		t.Errorf("Apply = %v, want DEADLINE_EXCEEDED naming the last error", err)
	}
	if n := s.callCount("MutateRow") - before; n != 3 {
		t.Errorf("%d attempts, want 3: one per retry before the deadline, none after", n)
	}
}

// deadline is a context whose deadline passes when the test says so
// (pass): it then ends with context.DeadlineExceeded, as a real deadline
// would.
type deadline struct {
	once sync.Once
	done chan struct{}
}

func newDeadline() *deadline { return &deadline{done: make(chan struct{})} }

func (d *deadline) pass()                       { d.once.Do(func() { close(d.done) }) }
func (d *deadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d *deadline) Done() <-chan struct{}       { return d.done }
func (d *deadline) Value(any) any               { return nil }
func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestSampleRowKeysCoversEveryTablet(t *testing.T) {
	c := newCluster(t, 2, "g", "p")
	samples, err := c.client(t).Open("t").SampleRowKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range samples {
		got = append(got, fmt.Sprintf("%s@%d", s.Key, s.OffsetBytes))
	}
	if want := "tab@100 tabg@200 tabp@300"; strings.Join(got, " ") != want {
		t.Errorf("samples = %v, want %s", got, want)
	}
}

// TestSampleRowKeysOptions: SampleTargetBytes reaches every tablet's
// server (the fake answers 100 + target bytes), and SampleRange asks only
// the tablets holding rows of the range (tablets [,g) [g,p) [p,)).
func TestSampleRowKeysOptions(t *testing.T) {
	c := newCluster(t, 2, "g", "p")
	tbl := c.client(t).Open("t")
	for _, tc := range []struct {
		opts []SampleOption
		want string
	}{
		{[]SampleOption{SampleTargetBytes(5)}, "tab@105 tabg@210 tabp@315"},
		{[]SampleOption{SampleRange([]byte("h"), []byte("o"))}, "tabg@100"},
		{[]SampleOption{SampleRange([]byte("g"), []byte("p"))}, "tabg@100"},
		{[]SampleOption{SampleRange(nil, []byte("h")), SampleTargetBytes(1)}, "tab@101 tabg@202"},
		{[]SampleOption{SampleRange([]byte("o"), nil)}, "tabg@100 tabp@200"},
	} {
		samples, err := tbl.SampleRowKeys(context.Background(), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range samples {
			got = append(got, fmt.Sprintf("%s@%d", s.Key, s.OffsetBytes))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("samples = %v, want %s", got, tc.want)
		}
	}
}

func TestNewClientFailsWithoutMaster(t *testing.T) {
	_, err := NewClientWithOptions(context.Background(), Options{Masters: []string{"127.0.0.1:1"}, ConnectTimeout: time.Second})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("NewClient = %v, want UNAVAILABLE naming the address", err)
	}
	if _, err := NewClient(context.Background()); status.Code(err) != codes.InvalidArgument {
		t.Errorf("NewClient() = %v", err)
	}
}

func TestAdminCreateTableSendsSchema(t *testing.T) {
	c := newCluster(t, 1)
	adm := c.client(t).Admin()
	fams := []families.Family{families.Default("cf"), {Name: "ts", MaxVersions: 2, TTL: time.Hour}}
	if err := adm.CreateTable(context.Background(), "users", fams, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	req := c.master.Created()[0]
	if req.GetSchema().GetName() != "users" || len(req.GetSchema().GetFamilies()) != 2 ||
		req.GetSchema().GetFamilies()[1].GetTtlMicros() != 3600e6 || string(req.GetSplitKeys()[0]) != "m" {
		t.Errorf("CreateTable sent %v", req)
	}
	if err := adm.CreateTable(context.Background(), "bad name", fams, nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad table name: %v", err)
	}
}

// A family's nested GC rule goes to the master and comes back from
// DescribeTable as it was; ModifyFamily changes it.
func TestAdminNestedGCRuleRoundTrips(t *testing.T) {
	c := newCluster(t, 1)
	adm := c.client(t).Admin()
	ctx := context.Background()
	rule := func(s string) *families.GCRule {
		r, err := families.ParseGCRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f := families.Default("ev")
	f.GCRule = rule("union(versions=3,intersection(age=7d,versions=1),union())")
	if err := adm.CreateTable(ctx, "users", []families.Family{f}, nil); err != nil {
		t.Fatal(err)
	}
	info, err := adm.DescribeTable(ctx, "users")
	if err != nil || len(info.Families) != 1 || !info.Families[0].Equal(f) {
		t.Fatalf("DescribeTable = %+v, %v; want family %s", info.Families, err, f.Spec())
	}
	f.GCRule = rule("intersection(age=1h,versions=2)")
	if err := adm.ModifyFamily(ctx, "users", f); err != nil {
		t.Fatal(err)
	}
	info, err = adm.DescribeTable(ctx, "users")
	if err != nil || !info.Families[0].Equal(f) {
		t.Fatalf("after ModifyFamily DescribeTable = %+v, %v; want family %s", info.Families, err, f.Spec())
	}
	bad := f
	bad.MaxVersions = 1
	if err := adm.ModifyFamily(ctx, "users", bad); status.Code(err) != codes.InvalidArgument {
		t.Errorf("ModifyFamily with both forms = %v, want INVALID_ARGUMENT", err)
	}
}

func TestScanFollowsSplitsThroughStaleCache(t *testing.T) {
	c := newCluster(t, 3, "g", "p")
	cl := c.client(t)
	tbl := cl.Open("t")
	fill(t, tbl, alphabet())
	ctx := context.Background()
	if got := keys(t, tbl.ReadRows(ctx, nil)); got != "abcdefghijklmnopqrstuvwxyz" {
		t.Fatalf("first scan = %q", got)
	}
	var addrs []string
	for a := range c.servers {
		addrs = append(addrs, a)
	}
	// Split the middle and last tablets behind the client's back.
	c.split("k", addrs[0], addrs[1])
	c.split("t", addrs[2], addrs[0])
	if got := keys(t, tbl.ReadRows(ctx, NewRange([]byte("c"), nil), LimitRows(20))); got != "cdefghijklmnopqrstuv" {
		t.Errorf("scan after splits = %q", got)
	}
	// The cache now holds the children, not the parents.
	for row, id := range map[string]string{"h": "tabgL", "m": "tabgR", "q": "tabpL", "z": "tabpR"} {
		if tab, ok := cl.loc.Cached("t", []byte(row)); !ok || tab.ID != id {
			t.Errorf("cached tablet of %s = %+v, %v; want %s", row, tab, ok, id)
		}
	}
	if got := keys(t, tbl.ReadRows(ctx, nil)); got != "abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("full scan after splits = %q", got)
	}
}

func TestRetryTimeoutBoundsRetriesWithoutDeadline(t *testing.T) {
	c := newCluster(t, 1)
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()},
		RetryTimeout: 150 * time.Millisecond, Backoff: locatorBackoff(10 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var s *fakeServer
	for _, s = range c.servers {
	}
	for i := 0; i < 1000; i++ {
		s.inject("ReadRows", status.Error(codes.Unavailable, "fake: down"))
	}
	start := time.Now()
	_, err = cl.Open("t").ReadRow(context.Background(), []byte("a"))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("ReadRow = %v, want the last UNAVAILABLE", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("gave up after %v, want about 150ms", d)
	}
	if n := s.callCount("ReadRows"); n < 3 {
		t.Errorf("only %d attempts", n)
	}
}

func TestApplyBulkGroupsPerServerAndBoundsRequests(t *testing.T) {
	c := newCluster(t, 2, "m")
	// No attempt timeout and no location checks: a request of 10,000
	// entries may take a loaded machine longer than either (it took 30 s
	// under the race detector at load 20), and a retry would be one more
	// call than the bound on request size makes.
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()}, AttemptTimeout: -1, LocationCheckDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tbl := cl.Open("t")
	var rows [][]byte
	var muts []*Mutation
	for i := 0; i < maxBulkEntries+10; i++ {
		rows = append(rows, []byte(fmt.Sprintf("a%05d", i))) // all in the first tablet
		muts = append(muts, NewMutation().Set("cf", nil, 1, nil))
	}
	rows = append(rows, []byte("z"))
	muts = append(muts, NewMutation().Set("cf", nil, 1, nil))
	errs, err := tbl.ApplyBulk(context.Background(), rows, muts)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("row %s: %v", rows[i], e)
		}
	}
	for _, s := range c.servers {
		want := 1
		if _, ok := s.held["tab"]; ok {
			want = 2 // more entries than one request may carry
		}
		if got := s.callCount("MutateRows"); got != want {
			t.Errorf("server holding %v got %d MutateRows calls, want %d", s.held, got, want)
		}
	}
}

// TestRegexFiltersTakeAnyByte: a row key, qualifier or value regex holding
// a byte that is not UTF-8 (0xFF) crosses the wire (the proto fields are
// bytes, as Bigtable's) and matches that byte.
func TestRegexFiltersTakeAnyByte(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	fill(t, tbl, []string{"a", "a\xff", "b"})
	ctx := context.Background()
	if err := tbl.Apply(ctx, []byte("b"), NewMutation().Set("cf", []byte("q\xff"), 10, []byte("w"))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *rowfilter.Filter
		want string
	}{
		{"row key", rowfilter.RowKeyRegex("a\xff"), "a\xff"},
		{"qualifier", rowfilter.QualifierRegex("q\xff"), "b"},
		{"value", rowfilter.ValueRegex("va\xff"), "a\xff"},
		{"negated byte", rowfilter.RowKeyRegex("[^\xff]"), "ab"},
	} {
		if got := keys(t, tbl.ReadRows(ctx, nil, WithFilter(tc.f))); got != tc.want {
			t.Errorf("%s: rows %q, want %q", tc.name, got, tc.want)
		}
	}
}
