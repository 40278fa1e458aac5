package master

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// snapshot is the cluster as etcd had it at one revision.
type snapshot struct {
	servers map[string]meta.ServerRecord
	tables  map[string]*tabulapb.TableSchema
	// tablets of every table, sorted by table, then start key.
	tablets []meta.VersionedTablet
	rev     int64
	at      time.Time // when the read was sent
}

// readSnapshot reads servers, tables and tablets in one transaction, so at
// one revision. Undecodable records are logged and skipped.
func (m *Master) readSnapshot(ctx context.Context) (*snapshot, error) {
	at := time.Now()
	c, err := meta.ReadCluster(ctx, m.cli, m.layout)
	if err != nil {
		return nil, err
	}
	for _, b := range c.Bad {
		m.log.Warn("skipping "+b.Kind+" record", "key", b.Key, "err", b.Err)
	}
	s := &snapshot{servers: map[string]meta.ServerRecord{}, tables: map[string]*tabulapb.TableSchema{}, tablets: c.Tablets, rev: c.Rev, at: at}
	for _, r := range c.Servers {
		s.servers[r.ID] = r
	}
	for _, r := range c.Tables {
		s.tables[r.Schema.GetName()] = r.Schema
	}
	return s, nil
}

// owned reports whether t is held by a live server: the server it names is
// registered under exactly the lease the tablet was assigned under
// (docs/OWNERSHIP.md). A record without a lease (written before leases
// were recorded) is owned while its server's address matches.
func (s *snapshot) owned(t *meta.TabletRecord) (meta.ServerRecord, bool) {
	if t.Server == "" || t.State == meta.StateUnassigned {
		return meta.ServerRecord{}, false
	}
	srv, ok := s.servers[t.Server]
	if t.Lease == 0 {
		return srv, ok && srv.Address == t.Address
	}
	return srv, ok && srv.Lease == t.Lease
}

// counts returns the number of tablets each live server holds.
func (s *snapshot) counts() map[string]int {
	c := make(map[string]int, len(s.servers))
	for id := range s.servers {
		c[id] = 0
	}
	for i := range s.tablets {
		if srv, ok := s.owned(&s.tablets[i].TabletRecord); ok {
			c[srv.ID]++
		}
	}
	return c
}

// pick returns the live server with the fewest tablets (ties by id),
// avoiding exclude when another server exists.
func (s *snapshot) pick(counts map[string]int, exclude string) (meta.ServerRecord, bool) {
	var best meta.ServerRecord
	found := false
	for id, srv := range s.servers {
		if id == exclude && len(s.servers) > 1 {
			continue
		}
		if !found || counts[id] < counts[best.ID] || (counts[id] == counts[best.ID] && id < best.ID) {
			best, found = srv, true
		}
	}
	return best, found
}

// serverSchema is the schema as sent to tablet servers: the cluster's
// default split threshold filled in.
func (m *Master) serverSchema(s *tabulapb.TableSchema) *tabulapb.TableSchema {
	c := proto.Clone(s).(*tabulapb.TableSchema)
	if c.SplitThresholdBytes == 0 {
		c.SplitThresholdBytes = m.opts.DefaultSplitThreshold
	}
	return c
}
