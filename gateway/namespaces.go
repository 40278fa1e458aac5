package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
)

// A Bigtable instance is a Tabula namespace (docs/GATEWAY.md "Names and
// instances"): instance I maps to namespace I when that namespace exists.
// "default" and Options.InstanceID are always the default namespace,
// where tables are named without a prefix. Any other instance depends on
// Options.Instances: with InstancesAny (the default) it is the default
// namespace too, so the applications that used arbitrary instance ids
// before namespaces existed keep their tables; with InstancesNamespaces
// it is NOT_FOUND, as Cloud Bigtable answers an instance never created.

// InstanceMode says what the gateway makes of an instance id that is
// neither the default instance nor an existing namespace
// (Options.Instances).
type InstanceMode int

const (
	// InstancesAny maps such an instance to the default namespace, as
	// every instance id did before namespaces existed and as the
	// emulator, which makes an instance on first use, lets clients
	// expect.
	InstancesAny InstanceMode = iota
	// InstancesNamespaces answers such an instance NOT_FOUND, as Cloud
	// Bigtable does, after reading the namespaces again: an instance is
	// never mapped to the wrong namespace, at the cost of a read of the
	// namespace list per call that names an unknown instance.
	InstancesNamespaces
)

// ParseInstanceMode parses "any" or "namespaces" (`tabula gateway
// --instances`).
func ParseInstanceMode(s string) (InstanceMode, error) {
	switch s {
	case "any", "":
		return InstancesAny, nil
	case "namespaces":
		return InstancesNamespaces, nil
	}
	return InstancesAny, fmt.Errorf("gateway: unknown instance mode %q: use any or namespaces", s)
}

func (m InstanceMode) String() string {
	if m == InstancesNamespaces {
		return "namespaces"
	}
	return "any"
}

// namespaces caches which namespaces exist, so that mapping an instance
// costs no call on the data path while the instance is known. The
// gateway's own CreateInstance and DeleteInstance update it at once. A
// miss (an instance that is not a known namespace) reads the list again:
//
//   - strict (InstancesNamespaces): always, and the call waits for a read
//     that started after it arrived, so a namespace created before the
//     call is always seen; a read that fails answers the miss UNAVAILABLE
//     (the names read before still answer);
//   - otherwise: when the last read began anyMissAge or more ago, the
//     call waits for a read (the one in flight, if any); a read that
//     fails is not tried again for failedReadAge, and meanwhile misses
//     answer from the names read before, so a master that is away stops
//     no data call once the cache has been read.
//
// One read is in flight at a time, shared by every caller that waits for
// it, each waiting no longer than its own context.
type namespaces struct {
	// defaultID is Options.InstanceID, always the default namespace.
	defaultID string
	strict    bool
	list      func(ctx context.Context) ([]string, error)
	now       func() time.Time
	// missWait is how long a miss in the default mode waits for a read
	// another call began before it answers from the cache (anyMissWait).
	missWait time.Duration

	// mu protects the fields below.
	mu    sync.Mutex
	known map[string]bool // nil until a read succeeds
	// started counts the reads begun; done is the number of the last one
	// that ended with an answer (not cut short by its caller's context),
	// and doneErr its error.
	started, done uint64
	doneErr       error
	lastStart     time.Time     // when the last read that ended began
	lastFailed    bool          // the last read that ended failed
	loading       chan struct{} // closed when the read in flight ends; nil if none
	waits         int           // calls that waited for a read another began (tests)
}

// anyMissAge is how old the cache may be before a miss in the default
// mode waits for a new read. The read is one call to the master, which
// makes one etcd range read of the namespace records: at most ten a
// second per gateway
// while some application uses an instance that is not a namespace (each
// such call then waits for a master round trip at most once per 100 ms),
// and a namespace made elsewhere is seen within 100 ms plus one read
// (docs/GATEWAY.md "Names and instances").
const anyMissAge = 100 * time.Millisecond

// anyMissWait is how long a miss in the default mode waits for a read
// in flight once the cache has been read: a master that does not answer
// then delays such a call by at most this, not by the call's deadline.
const anyMissWait = time.Second

// failedReadAge is how long a miss in the default mode answers from the
// cache after a read failed, before it tries again: a master that is
// away would otherwise make every call wait for a read that fails.
const failedReadAge = 2 * time.Second

// of returns the namespace of instance in.
func (n *namespaces) of(ctx context.Context, in instanceName) (string, error) {
	id := in.instance
	if id == cell.DefaultNamespace || id == n.defaultID {
		return cell.DefaultNamespace, nil
	}
	if cell.ValidateNamespaceName(id) != nil { // "{{instance}}" and the like: never a namespace
		if n.strict {
			return "", notFoundInstance(in)
		}
		return cell.DefaultNamespace, nil
	}
	n.mu.Lock()
	need := n.started + 1 // a read that begins after this call arrived
	for {
		switch {
		case n.known[id]:
			n.mu.Unlock()
			return id, nil
		case n.strict && n.done >= need:
			err := n.doneErr
			n.mu.Unlock()
			if err != nil {
				return "", err
			}
			return "", notFoundInstance(in)
		case !n.strict && n.known != nil && (n.freshLocked() || n.done >= need):
			n.mu.Unlock() // read recently, or since this call arrived (or failed: keep it)
			return cell.DefaultNamespace, nil
		case !n.strict && n.done >= need:
			err := n.doneErr // never read: nothing to answer from
			n.mu.Unlock()
			return "", err
		case n.loading != nil:
			wait := n.loading
			var timer *time.Timer
			var timeout <-chan time.Time
			if !n.strict {
				// The read in flight began before this call, but
				// recently: it will do. A slow one is not waited for
				// past missWait once there is a cache to answer from.
				need = min(need, n.started)
				if n.known != nil {
					timer = time.NewTimer(n.missWait)
					timeout = timer.C
				}
			}
			n.waits++
			n.mu.Unlock()
			var err error
			select {
			case <-wait:
			case <-timeout:
				return cell.DefaultNamespace, nil
			case <-ctx.Done():
				err = toStatus(ctx.Err())
			}
			if timer != nil {
				timer.Stop()
			}
			if err != nil {
				return "", err
			}
			n.mu.Lock()
			continue
		}
		if err := ctx.Err(); err != nil {
			n.mu.Unlock()
			return "", toStatus(err)
		}
		n.readLocked(ctx)
	}
}

// freshLocked reports whether a miss in the default mode may answer
// from the cache without reading it again.
func (n *namespaces) freshLocked() bool {
	age := n.now().Sub(n.lastStart)
	if n.lastFailed {
		return age < failedReadAge
	}
	return age < anyMissAge
}

// readLocked reads the namespaces, with n.mu held on entry and on return
// but not during the read.
func (n *namespaces) readLocked(ctx context.Context) {
	n.started++
	seq, begun := n.started, n.now()
	done := make(chan struct{})
	n.loading = done
	n.mu.Unlock()
	known, err := n.read(ctx)
	n.mu.Lock()
	n.loading = nil
	close(done)
	if err != nil && ctx.Err() != nil {
		return // cut short by this caller: the others read again
	}
	if err == nil {
		n.known = known
	}
	n.done, n.doneErr, n.lastStart, n.lastFailed = seq, err, begun, err != nil
}

// notFoundInstance is the answer to an instance that is not a namespace
// in strict mode, in Cloud Bigtable's words.
func notFoundInstance(in instanceName) error {
	return notFoundf("instance %s not found: it is not a Tabula namespace (the gateway runs with --instances=namespaces; create it with CreateInstance or `tabula namespace create %s`)", in, in.instance)
}

// read lists the namespaces other than the default one.
func (n *namespaces) read(ctx context.Context) (map[string]bool, error) {
	names, err := n.list(ctx)
	if status.Code(err) == codes.Unimplemented {
		names, err = nil, nil // a cluster from before namespaces: every instance is the default namespace
	}
	if err != nil {
		return nil, toStatus(err)
	}
	known := make(map[string]bool, len(names))
	for _, name := range names {
		if name != cell.DefaultNamespace {
			known[name] = true
		}
	}
	return known, nil
}

// set records that namespace name exists (or not), after this gateway
// created or deleted it.
func (n *namespaces) set(name string, exists bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.known == nil {
		return // not loaded yet: the first use reads it
	}
	if exists {
		n.known[name] = true
	} else {
		delete(n.known, name)
	}
}

// resolve maps a parsed table name to its Tabula table.
func (s *Server) resolve(ctx context.Context, n tableName) (tableName, error) {
	ns, err := s.ns.of(ctx, n.instanceName)
	if err != nil {
		return n, err
	}
	n.table = cell.QualifiedTableName(ns, n.id)
	return n, nil
}

// parseTable parses and maps a table's resource name (names.go, resolve).
func (s *Server) parseTable(ctx context.Context, field, name string) (tableName, error) {
	n, err := parseTable(field, name)
	if err != nil {
		return n, err
	}
	return s.resolve(ctx, n)
}

// listNamespaces is namespaces.list for the Tabula client.
func (s *Server) listNamespaces(ctx context.Context) ([]string, error) {
	nss, err := s.c.Admin().ListNamespaces(ctx)
	var out []string
	for _, n := range nss {
		out = append(out, n.Name)
	}
	return out, err
}
