package tabletserver

import (
	"context"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// schemaReads counts the reads of one key's value (a table record) that
// go through it: Gets, and Gets in the branch of a transaction that ran;
// a read of the key alone (keys only) is not one.
type schemaReads struct {
	meta.Store
	key string
	n   atomic.Int64
}

func (c *schemaReads) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if key == c.key && !clientv3.OpGet(key, opts...).IsKeysOnly() {
		c.n.Add(1)
	}
	return c.Store.Get(ctx, key, opts...)
}

func (c *schemaReads) Txn(ctx context.Context) clientv3.Txn {
	return &schemaReadsTxn{c: c, txn: c.Store.Txn(ctx)}
}

type schemaReadsTxn struct {
	c             *schemaReads
	txn           clientv3.Txn
	then, elseOps []clientv3.Op
}

func (t *schemaReadsTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.txn = t.txn.If(cs...); return t }

func (t *schemaReadsTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = append(t.then, ops...)
	t.txn = t.txn.Then(ops...)
	return t
}

func (t *schemaReadsTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elseOps = append(t.elseOps, ops...)
	t.txn = t.txn.Else(ops...)
	return t
}

func (t *schemaReadsTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.txn.Commit()
	if err != nil {
		return resp, err
	}
	ran := t.elseOps
	if resp.Succeeded {
		ran = t.then
	}
	for _, op := range ran {
		if op.IsGet() && string(op.KeyBytes()) == t.c.key && !op.IsKeysOnly() {
			t.c.n.Add(1)
		}
	}
	return resp, nil
}

// The loads of one table's tablets read its schema from etcd once, and
// a load after the schema changed in etcd applies the new one even
// though no UpdateSchema came (the master's push is best effort): a load
// never applies a schema older than the one etcd holds with the tablet
// record it checked (tablets.go, schemaCache).
func TestLoadsReadASchemaOnceAndAChangedOneAgain(t *testing.T) {
	e := newEnv(t)
	reads := &schemaReads{Store: e.twin, key: e.layout.TableKey(e.schema.Name)}
	srv := e.start(func(o *Options) { o.Store = reads })
	c := e.dial(srv)

	bounds := []string{"", "b", "d", "f", ""}
	for i := range 3 {
		e.load(c, e.assign(string(rune('a'+i)), []byte(bounds[i]), []byte(bounds[i+1]), srv, 1))
	}
	if n := reads.n.Load(); n != 1 {
		t.Fatalf("3 loads of one table read its schema %d times, want 1", n)
	}

	// A family added in etcd, not pushed to the server.
	grown := &tabulapb.TableSchema{Name: e.schema.Name, Families: append(e.schema.GetFamilies(), &tabulapb.Family{Name: "added"})}
	e.putSchema(grown)
	ref := e.load(c, e.assign("d", []byte("f"), nil, srv, 1))
	if n := reads.n.Load(); n != 2 {
		t.Fatalf("a load after the schema changed: %d reads of it in all, want 2", n)
	}
	if err := put(e.ctx, c, ref, "g", set("added", "q", 1, "v")); err != nil {
		t.Fatalf("writing the family added in etcd to the tablet loaded after it: %v", err)
	}
	if fams, err := srv.familiesOf(e.schema.Name); err != nil || len(fams) != 3 {
		t.Fatalf("the server's schema of the table after the load: %v families, %v; want 3", len(fams), err)
	}
}
