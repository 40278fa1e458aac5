package memstore

import (
	"bytes"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// The MVCC core: one global revision, every version of every key, and the
// events of every revision. History is never compacted, so historical
// reads and watches from any revision since the start always work; the
// twin lives only as long as a test.
//
// A key's versions are kept in revision order; a deletion is a version
// with a nil KeyValue. keys lists every key ever written, sorted, so that
// a range is a binary search and a walk.

// version is one state of a key from revision rev on: kv, or nil when the
// key was deleted at rev.
type version struct {
	rev int64
	kv  *mvccpb.KeyValue
}

// revEvents are the events of one revision, in the order they happened.
type revEvents struct {
	rev    int64
	events []*mvccpb.Event // each with PrevKv set; watchers strip it unless asked
}

// mvcc is the key space. It is not safe for concurrent use: the Store's
// lock guards it.
type mvcc struct {
	rev      int64                     // the current revision; 1 for an empty store, as etcd's
	versions map[string][]version      // key → its versions, oldest first
	keys     []string                  // every key ever written, sorted
	log      []revEvents               // the events of every revision, oldest first
	pending  []*mvccpb.Event           // the events of the write in progress
	leaseOf  map[string]int64          // live key → the lease it is bound to (absent: none)
	attached map[int64]map[string]bool // lease → its live keys
}

func newMVCC() *mvcc {
	return &mvcc{rev: 1, versions: map[string][]version{}, leaseOf: map[string]int64{}, attached: map[int64]map[string]bool{}}
}

// latest returns key's live value at rev (0: the current revision), nil
// if it did not exist then.
func (m *mvcc) latest(key string, rev int64) *mvccpb.KeyValue {
	vs := m.versions[key]
	if rev <= 0 {
		if len(vs) == 0 {
			return nil
		}
		return vs[len(vs)-1].kv
	}
	i := sort.Search(len(vs), func(i int) bool { return vs[i].rev > rev })
	if i == 0 {
		return nil
	}
	return vs[i-1].kv
}

// span returns the keys of [key, end) in etcd's encoding of a range: end
// nil is key alone, end "\x00" is every key from key on.
func (m *mvcc) span(key, end []byte) []string {
	if len(end) == 0 {
		if _, ok := m.versions[string(key)]; ok {
			return []string{string(key)}
		}
		return nil
	}
	from := sort.SearchStrings(m.keys, string(key))
	to := len(m.keys)
	if !bytes.Equal(end, []byte{0}) {
		to = sort.SearchStrings(m.keys, string(end))
	}
	if from >= to {
		return nil
	}
	return m.keys[from:to]
}

// rangeAt returns the live values of [key, end) at rev (0: now), sorted
// by key.
func (m *mvcc) rangeAt(key, end []byte, rev int64) []*mvccpb.KeyValue {
	var out []*mvccpb.KeyValue
	for _, k := range m.span(key, end) {
		if kv := m.latest(k, rev); kv != nil {
			out = append(out, kv)
		}
	}
	return out
}

// nextRev is the revision the write in progress commits at.
func (m *mvcc) nextRev() int64 { return m.rev + 1 }

// put writes key at the pending revision. lease is 0 for none.
func (m *mvcc) put(req *pb.PutRequest) (*pb.PutResponse, error) {
	key := string(req.Key)
	prev := m.latest(key, 0)
	val, lease := req.Value, req.Lease
	if req.IgnoreValue || req.IgnoreLease {
		if prev == nil {
			return nil, rpctypes.ErrGRPCKeyNotFound
		}
		if req.IgnoreValue {
			if len(req.Value) != 0 {
				return nil, rpctypes.ErrGRPCValueProvided
			}
			val = prev.Value
		}
		if req.IgnoreLease {
			if req.Lease != 0 {
				return nil, rpctypes.ErrGRPCLeaseProvided
			}
			lease = prev.Lease
		}
	}
	if lease != 0 {
		if _, ok := m.attached[lease]; !ok {
			return nil, rpctypes.ErrGRPCLeaseNotFound
		}
	}
	rev := m.nextRev()
	kv := &mvccpb.KeyValue{Key: []byte(key), Value: bytes.Clone(val), CreateRevision: rev, ModRevision: rev, Version: 1, Lease: lease}
	if prev != nil {
		kv.CreateRevision, kv.Version = prev.CreateRevision, prev.Version+1
	}
	m.record(key, kv)
	m.bind(key, lease)
	m.pending = append(m.pending, &mvccpb.Event{Type: mvccpb.PUT, Kv: kv, PrevKv: prev})
	resp := &pb.PutResponse{}
	if req.PrevKv {
		resp.PrevKv = prev
	}
	return resp, nil
}

// deleteRange deletes the live keys of [key, end) at the pending revision.
func (m *mvcc) deleteRange(req *pb.DeleteRangeRequest) *pb.DeleteRangeResponse {
	resp := &pb.DeleteRangeResponse{}
	for _, prev := range m.rangeAt(req.Key, req.RangeEnd, 0) {
		m.deleteKey(prev)
		resp.Deleted++
		if req.PrevKv {
			resp.PrevKvs = append(resp.PrevKvs, prev)
		}
	}
	return resp
}

// deleteKey deletes the live key of prev at the pending revision. A delete
// event's Kv holds only the key and the revision, as etcd's does.
func (m *mvcc) deleteKey(prev *mvccpb.KeyValue) {
	key := string(prev.Key)
	m.record(key, nil)
	m.bind(key, 0)
	m.pending = append(m.pending, &mvccpb.Event{Type: mvccpb.DELETE,
		Kv: &mvccpb.KeyValue{Key: prev.Key, ModRevision: m.nextRev()}, PrevKv: prev})
}

// record appends key's new version (nil: deleted) at the pending revision.
func (m *mvcc) record(key string, kv *mvccpb.KeyValue) {
	vs, ok := m.versions[key]
	if !ok {
		i := sort.SearchStrings(m.keys, key)
		m.keys = append(m.keys, "")
		copy(m.keys[i+1:], m.keys[i:])
		m.keys[i] = key
	}
	rev := m.nextRev()
	if n := len(vs); n > 0 && vs[n-1].rev == rev {
		vs[n-1].kv = kv // written twice in one revision (a lease revoke cannot, a txn is refused)
	} else {
		vs = append(vs, version{rev: rev, kv: kv})
	}
	m.versions[key] = vs
}

// bind moves key's lease attachment to lease (0: none).
func (m *mvcc) bind(key string, lease int64) {
	if old, ok := m.leaseOf[key]; ok {
		delete(m.attached[old], key)
		delete(m.leaseOf, key)
	}
	if lease != 0 {
		m.leaseOf[key] = lease
		m.attached[lease][key] = true
	}
}

// commit ends the write in progress: if it changed anything, the revision
// moves on and its events are logged and returned; otherwise nothing
// happened and the revision stays, as in etcd.
func (m *mvcc) commit() (revEvents, bool) {
	if len(m.pending) == 0 {
		return revEvents{}, false
	}
	m.rev++
	re := revEvents{rev: m.rev, events: m.pending}
	m.log = append(m.log, re)
	m.pending = nil
	return re, true
}

// eventsSince returns the logged revisions from rev on.
func (m *mvcc) eventsSince(rev int64) []revEvents {
	i := sort.Search(len(m.log), func(i int) bool { return m.log[i].rev >= rev })
	return m.log[i:]
}

// inRange reports whether key lies in etcd's range [start, end).
func inRange(key, start, end []byte) bool {
	switch {
	case len(end) == 0:
		return bytes.Equal(key, start)
	case bytes.Equal(end, []byte{0}):
		return bytes.Compare(key, start) >= 0
	}
	return bytes.Compare(key, start) >= 0 && bytes.Compare(key, end) < 0
}

// cloneKV copies kv for a caller, who may change what it gets (a real
// etcd decodes a fresh copy for every answer); keysOnly leaves out the
// value.
func cloneKV(kv *mvccpb.KeyValue, keysOnly bool) *mvccpb.KeyValue {
	if kv == nil {
		return nil
	}
	c := &mvccpb.KeyValue{Key: bytes.Clone(kv.Key), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
		Version: kv.Version, Lease: kv.Lease}
	if !keysOnly {
		c.Value = bytes.Clone(kv.Value)
	}
	return c
}
