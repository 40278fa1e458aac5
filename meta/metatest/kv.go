package metatest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys, revisions, reads and transactions.
var _ = register(
	testCase{name: "RevisionsOfPutAndDelete", run: testRevisions},
	testCase{name: "TxnCompares", run: testTxnCompares},
	testCase{name: "TxnBranchesAndResponses", run: testTxnBranches},
	testCase{name: "TxnRefusesAKeyWrittenTwiceOrAnEmptyKey", run: testTxnDuplicate},
	testCase{name: "HistoricalReads", run: testHistoricalReads},
	testCase{name: "RangeLimitPagingAndCount", run: testPaging},
	testCase{name: "SortByCreateRevision", run: testSort},
	testCase{name: "DeletePrefixAndRange", run: testDeleteRange},
	testCase{name: "PutIgnoreValueAndLease", run: testPutIgnore},
)

// Every write moves the one global revision by one; a key keeps its
// CreateRevision until deleted, and counts its Version from 1.
func testRevisions(t *testing.T, h Harness, p string) {
	c := ctx(t)
	r1 := put(t, h, p+"a", "1").Header.Revision
	r2 := put(t, h, p+"a", "2").Header.Revision
	if r2 != r1+1 {
		t.Fatalf("second put at revision %d, want %d", r2, r1+1)
	}
	kv := get(t, h, p+"a").Kvs[0]
	if kv.CreateRevision != r1 || kv.ModRevision != r2 || kv.Version != 2 || string(kv.Value) != "2" || kv.Lease != 0 {
		t.Fatalf("after two puts: %+v", kv)
	}
	miss := get(t, h, p+"missing")
	if len(miss.Kvs) != 0 || miss.Count != 0 || miss.Header.Revision != r2 {
		t.Fatalf("get of a missing key: %+v", miss)
	}
	d, err := h.Store.Delete(c, p+"a")
	if err != nil || d.Deleted != 1 || d.Header.Revision != r2+1 {
		t.Fatalf("delete: %+v %v", d, err)
	}
	// Deleting nothing writes nothing: the revision stays.
	d, err = h.Store.Delete(c, p+"a")
	if err != nil || d.Deleted != 0 || d.Header.Revision != r2+1 {
		t.Fatalf("delete of a missing key: %+v %v", d, err)
	}
	r4 := put(t, h, p+"a", "3").Header.Revision
	kv = get(t, h, p+"a").Kvs[0]
	if r4 != r2+2 || kv.CreateRevision != r4 || kv.Version != 1 {
		t.Fatalf("put after delete at %d: %+v", r4, kv)
	}
	if _, err := h.Store.Put(c, p+"b", "x", clientv3.WithLease(clientv3.LeaseID(12345))); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("put under a lease that does not exist: %v, want ErrLeaseNotFound", err)
	}
}

// Every compare kind Tabula writes, on a key that exists and on one that
// does not (zero revisions, version and lease; a value compare fails).
func testTxnCompares(t *testing.T, h Harness, p string) {
	c := ctx(t)
	lease := grant(t, h, 60)
	pr := put(t, h, p+"k", "m", clientv3.WithLease(lease))
	rev := pr.Header.Revision
	k, none := p+"k", p+"none"
	for _, tc := range []struct {
		cmp  clientv3.Cmp
		want bool
	}{
		{clientv3.Compare(clientv3.Value(k), "=", "m"), true},
		{clientv3.Compare(clientv3.Value(k), "!=", "m"), false},
		{clientv3.Compare(clientv3.Value(k), "<", "n"), true},
		{clientv3.Compare(clientv3.Value(k), ">", "n"), false},
		{clientv3.Compare(clientv3.Version(k), "=", 1), true},
		{clientv3.Compare(clientv3.Version(k), ">", 0), true},
		{clientv3.Compare(clientv3.CreateRevision(k), "=", rev), true},
		{clientv3.Compare(clientv3.CreateRevision(k), "=", 0), false},
		{clientv3.Compare(clientv3.ModRevision(k), "=", rev), true},
		{clientv3.Compare(clientv3.ModRevision(k), "<", rev), false},
		{clientv3.Compare(clientv3.ModRevision(k), "!=", rev+1), true},
		{clientv3.Compare(clientv3.LeaseValue(k), "=", lease), true},
		{clientv3.Compare(clientv3.LeaseValue(k), "=", clientv3.NoLease), false},
		{clientv3.Compare(clientv3.Value(none), "=", ""), false},
		{clientv3.Compare(clientv3.Value(none), "!=", "x"), false},
		{clientv3.Compare(clientv3.Version(none), "=", 0), true},
		{clientv3.Compare(clientv3.CreateRevision(none), "=", 0), true},
		{clientv3.Compare(clientv3.ModRevision(none), "=", 0), true},
		{clientv3.Compare(clientv3.LeaseValue(none), "=", clientv3.NoLease), true},
		// A compare over a range holds for every key in it.
		{clientv3.Compare(clientv3.ModRevision(p), ">", 0).WithPrefix(), true},
		{clientv3.Compare(clientv3.Value(p), "=", "other").WithPrefix(), false},
	} {
		resp, err := h.Store.Txn(c).If(tc.cmp).Commit()
		if err != nil || resp.Succeeded != tc.want {
			t.Errorf("%v: succeeded %v, err %v; want %v", tc.cmp.GetCompare(), resp != nil && resp.Succeeded, err, tc.want)
		}
	}
}

// Then and Else run in order at one revision, a read sees the writes
// before it, and each op answers in Responses.
func testTxnBranches(t *testing.T, h Harness, p string) {
	c := ctx(t)
	rev := put(t, h, p+"a", "1").Header.Revision
	resp, err := h.Store.Txn(c).
		If(clientv3.Compare(clientv3.ModRevision(p+"a"), "=", rev)).
		Then(clientv3.OpPut(p+"b", "2"), clientv3.OpDelete(p+"a"), clientv3.OpGet(p, clientv3.WithPrefix())).
		Else(clientv3.OpGet(p + "a")).
		Commit()
	if err != nil || !resp.Succeeded || resp.Header.Revision != rev+1 || len(resp.Responses) != 3 {
		t.Fatalf("txn: %+v %v", resp, err)
	}
	if pr := resp.Responses[0].GetResponsePut(); pr == nil {
		t.Fatalf("first answer %v, want a put", resp.Responses[0])
	}
	if dr := resp.Responses[1].GetResponseDeleteRange(); dr == nil || dr.Deleted != 1 {
		t.Fatalf("second answer %v, want one deleted", resp.Responses[1])
	}
	rr := resp.Responses[2].GetResponseRange()
	if rr == nil || len(rr.Kvs) != 1 || string(rr.Kvs[0].Key) != p+"b" || rr.Kvs[0].ModRevision != rev+1 {
		t.Fatalf("a read after the writes of its transaction: %v", resp.Responses[2])
	}
	// The guard fails now: Else runs, reads a key that is gone, and
	// writes nothing.
	resp, err = h.Store.Txn(c).
		If(clientv3.Compare(clientv3.ModRevision(p+"a"), "=", rev)).
		Then(clientv3.OpPut(p+"c", "3")).
		Else(clientv3.OpGet(p+"a"), clientv3.OpGet(p+"b")).
		Commit()
	if err != nil || resp.Succeeded || resp.Header.Revision != rev+1 || len(resp.Responses) != 2 {
		t.Fatalf("failed txn: %+v %v", resp, err)
	}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) != 0 {
		t.Fatalf("else read a deleted key: %v", kvs)
	}
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) != 1 || string(kvs[0].Value) != "2" {
		t.Fatalf("else read: %v", kvs)
	}
	if n := get(t, h, p+"c").Count; n != 0 {
		t.Fatal("the Then branch of a failed txn wrote")
	}
}

func testTxnDuplicate(t *testing.T, h Harness, p string) {
	c := ctx(t)
	for name, ops := range map[string][]clientv3.Op{
		"two puts":       {clientv3.OpPut(p+"a", "1"), clientv3.OpPut(p+"a", "2")},
		"put and delete": {clientv3.OpDelete(p, clientv3.WithPrefix()), clientv3.OpPut(p+"a", "1")},
	} {
		if _, err := h.Store.Txn(c).Then(ops...).Commit(); !errors.Is(err, rpctypes.ErrDuplicateKey) {
			t.Errorf("%s: %v, want ErrDuplicateKey", name, err)
		}
	}
	// The branch that would not run is checked too.
	_, err := h.Store.Txn(c).If(clientv3.Compare(clientv3.Version(p+"a"), "=", 0)).
		Then(clientv3.OpPut(p+"b", "1")).
		Else(clientv3.OpPut(p+"a", "1"), clientv3.OpPut(p+"a", "2")).Commit()
	if !errors.Is(err, rpctypes.ErrDuplicateKey) {
		t.Errorf("duplicate keys in the other branch: %v, want ErrDuplicateKey", err)
	}
	if n := get(t, h, p, clientv3.WithPrefix()).Count; n != 0 {
		t.Fatalf("a refused txn wrote %d keys", n)
	}
	if _, err := h.Store.Put(c, "", "x"); !errors.Is(err, rpctypes.ErrEmptyKey) {
		t.Errorf("put of an empty key: %v, want ErrEmptyKey", err)
	}
	if _, err := h.Store.Txn(c).Then(clientv3.OpPut("", "x")).Commit(); !errors.Is(err, rpctypes.ErrEmptyKey) {
		t.Errorf("txn put of an empty key: %v, want ErrEmptyKey", err)
	}
}

// A read at an old revision sees the keys as they were, and its header
// the current revision; a future revision is refused.
func testHistoricalReads(t *testing.T, h Harness, p string) {
	c := ctx(t)
	r1 := put(t, h, p+"a", "1").Header.Revision
	put(t, h, p+"b", "1")
	put(t, h, p+"a", "2")
	if _, err := h.Store.Delete(c, p+"b"); err != nil {
		t.Fatal(err)
	}
	now := put(t, h, p+"c", "1").Header.Revision
	old := get(t, h, p+"a", clientv3.WithRev(r1))
	if len(old.Kvs) != 1 || string(old.Kvs[0].Value) != "1" || old.Header.Revision != now {
		t.Fatalf("a at %d: %+v", r1, old)
	}
	mid := get(t, h, p, clientv3.WithPrefix(), clientv3.WithRev(r1+1))
	if got := keys(mid); !slices.Equal(got, []string{p + "a", p + "b"}) || string(mid.Kvs[0].Value) != "1" {
		t.Fatalf("prefix at %d: %v", r1+1, got)
	}
	if got := keys(get(t, h, p, clientv3.WithPrefix())); !slices.Equal(got, []string{p + "a", p + "c"}) {
		t.Fatalf("prefix now: %v", got)
	}
	if _, err := h.Store.Get(c, p+"a", clientv3.WithRev(now+1000)); !errors.Is(err, rpctypes.ErrFutureRev) {
		t.Fatalf("read at a future revision: %v, want ErrFutureRev", err)
	}
}

// The master's index pages a range at one revision: Limit cuts, More says
// so, Count counts them all.
func testPaging(t *testing.T, h Harness, p string) {
	c := ctx(t)
	var all []string
	for i := range 10 {
		k := fmt.Sprintf("%sk%02d", p, i)
		all = append(all, k)
		put(t, h, k, "v")
	}
	put(t, h, p+"z", "outside")
	first := get(t, h, p+"k", clientv3.WithRange(p+"l"), clientv3.WithLimit(4))
	if !slices.Equal(keys(first), all[:4]) || !first.More || first.Count != 10 {
		t.Fatalf("first page: %v more %v count %d", keys(first), first.More, first.Count)
	}
	rev := first.Header.Revision
	put(t, h, p+"k05", "changed after the first page")
	var paged []string
	key := p + "k"
	for {
		resp := get(t, h, key, clientv3.WithRange(p+"l"), clientv3.WithLimit(4), clientv3.WithRev(rev))
		for _, kv := range resp.Kvs {
			if string(kv.Value) != "v" {
				t.Fatalf("page at revision %d saw a later write: %s", rev, kv.Key)
			}
		}
		paged = append(paged, keys(resp)...)
		if !resp.More {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("paged %v, want %v", paged, all)
	}
	exact := get(t, h, p+"k", clientv3.WithRange(p+"l"), clientv3.WithLimit(10))
	if exact.More || len(exact.Kvs) != 10 {
		t.Fatalf("a limit equal to the count: more %v, %d keys", exact.More, len(exact.Kvs))
	}
	count := get(t, h, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if count.Count != 11 || len(count.Kvs) != 0 {
		t.Fatalf("count only: %+v", count)
	}
	ko := get(t, h, p, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSerializable())
	if len(ko.Kvs) != 11 || ko.Kvs[0].Value != nil || ko.Kvs[0].ModRevision == 0 {
		t.Fatalf("keys only: %v", ko.Kvs[0])
	}
	from := get(t, h, p+"k09", clientv3.WithFromKey(), clientv3.WithLimit(2))
	if !slices.Equal(keys(from), []string{p + "k09", p + "z"}) {
		t.Fatalf("from key: %v", keys(from))
	}
	if _, err := h.Store.Get(c, p+"k", clientv3.WithPrefix(), clientv3.WithLimit(1)); err != nil {
		t.Fatal(err)
	}
}

// WithFirstCreate and WithLastCreate (the election's) sort by
// CreateRevision and keep one.
func testSort(t *testing.T, h Harness, p string) {
	put(t, h, p+"b", "first")
	put(t, h, p+"a", "second")
	put(t, h, p+"c", "third")
	put(t, h, p+"b", "rewritten") // keeps its CreateRevision
	first := get(t, h, p, append(clientv3.WithFirstCreate(), clientv3.WithPrefix())...)
	if !slices.Equal(keys(first), []string{p + "b"}) || first.Count != 3 {
		t.Fatalf("first created: %v count %d", keys(first), first.Count)
	}
	last := get(t, h, p, append(clientv3.WithLastCreate(), clientv3.WithPrefix())...)
	if !slices.Equal(keys(last), []string{p + "c"}) {
		t.Fatalf("last created: %v", keys(last))
	}
	below := get(t, h, p, append(clientv3.WithLastCreate(), clientv3.WithPrefix(), clientv3.WithMaxCreateRev(last.Kvs[0].CreateRevision-1))...)
	if !slices.Equal(keys(below), []string{p + "a"}) {
		t.Fatalf("last created below c: %v", keys(below))
	}
	all := get(t, h, p, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend))
	if !slices.Equal(keys(all), []string{p + "c", p + "a", p + "b"}) {
		t.Fatalf("by create revision, descending: %v", keys(all))
	}
}

func testDeleteRange(t *testing.T, h Harness, p string) {
	c := ctx(t)
	for _, k := range []string{"a1", "a2", "b1", "b2", "c"} {
		put(t, h, p+k, k)
	}
	d, err := h.Store.Delete(c, p+"a", clientv3.WithPrefix(), clientv3.WithPrevKV())
	if err != nil || d.Deleted != 2 || len(d.PrevKvs) != 2 || string(d.PrevKvs[1].Value) != "a2" {
		t.Fatalf("delete prefix: %+v %v", d, err)
	}
	d, err = h.Store.Delete(c, p+"b2", clientv3.WithRange(p+"c\x00"))
	if err != nil || d.Deleted != 2 || len(d.PrevKvs) != 0 {
		t.Fatalf("delete range: %+v %v", d, err)
	}
	if got := keys(get(t, h, p, clientv3.WithPrefix())); !slices.Equal(got, []string{p + "b1"}) {
		t.Fatalf("left: %v", got)
	}
	// One revision for the whole delete.
	if revs := get(t, h, p, clientv3.WithPrefix()).Header.Revision; revs != d.Header.Revision {
		t.Fatalf("revision %d after the delete answered %d", revs, d.Header.Revision)
	}
}

// meta's fences rewrite a key as it is: same value, same lease, a new
// ModRevision.
func testPutIgnore(t *testing.T, h Harness, p string) {
	c := ctx(t)
	lease := grant(t, h, 60)
	put(t, h, p+"k", "v", clientv3.WithLease(lease))
	r := put(t, h, p+"k", "", clientv3.WithIgnoreValue(), clientv3.WithIgnoreLease(), clientv3.WithPrevKV())
	if r.PrevKv == nil || string(r.PrevKv.Value) != "v" {
		t.Fatalf("prev kv: %v", r.PrevKv)
	}
	kv := get(t, h, p+"k").Kvs[0]
	if string(kv.Value) != "v" || clientv3.LeaseID(kv.Lease) != lease || kv.ModRevision != r.Header.Revision || kv.Version != 2 {
		t.Fatalf("after the touch: %+v", kv)
	}
	if _, err := h.Store.Put(c, p+"none", "", clientv3.WithIgnoreValue()); !errors.Is(err, rpctypes.ErrKeyNotFound) {
		t.Fatalf("ignore value of a missing key: %v, want ErrKeyNotFound", err)
	}
}
