package main

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
)

// benchAPI is the one thing `tabula bench --api` changes: the calls the
// workloads make. The workload loop (bencher) is shared, so every API runs
// exactly the same keys, values, batches and concurrency.
type benchAPI interface {
	// createTable creates table with the family cf, pre-split at splits,
	// and says whether it did (false: it already existed).
	createTable(ctx context.Context, table string, splits [][]byte) (bool, error)
	deleteTable(ctx context.Context, table string) error
	open(table string) benchTable
	close()
}

// benchTable is the data operations of the workloads on one table. Every
// write is the cell cf:v at timestamp ts (microseconds); reads return the
// newest cell of each column, as in the paper: both write workloads write
// every key, so rows hold several versions and reading them all would
// count each row's bytes twice.
type benchTable interface {
	applyRow(ctx context.Context, key, value []byte, ts int64) error
	// applyBatch writes one row per key in one bulk call.
	applyBatch(ctx context.Context, keys, values [][]byte, ts int64) error
	// readRow returns the value bytes of a row and whether it has cells.
	readRow(ctx context.Context, key []byte) (size int64, found bool, err error)
	// scan reads the rows in [lo, hi) in order and calls row with the value
	// bytes of each.
	scan(ctx context.Context, lo, hi []byte, row func(size int64)) error
}

var benchColumn = []byte("v")

// tabulaBench is Tabula's own Go client.
type tabulaBench struct{ c *client.Client }

func (b tabulaBench) createTable(ctx context.Context, table string, splits [][]byte) (bool, error) {
	admin := b.c.Admin()
	err := admin.CreateTable(ctx, table, []families.Family{families.Default(benchFamily)}, splits)
	if status.Code(errors.Unwrap(err)) == codes.AlreadyExists || status.Code(err) == codes.AlreadyExists {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, waitAssigned(ctx, admin, table)
}

func (b tabulaBench) deleteTable(ctx context.Context, table string) error {
	return b.c.Admin().DeleteTable(ctx, table)
}

func (b tabulaBench) open(table string) benchTable { return tabulaBenchTable{b.c.Open(table)} }

func (tabulaBench) close() {} // the session closes the client

// waitAssigned waits until every tablet of a new table has a server, so
// that the first writes do not race the master's assignment.
func waitAssigned(ctx context.Context, admin *client.AdminClient, table string) error {
	for {
		ts, err := admin.Tablets(ctx, table)
		ready := err == nil && len(ts) > 0
		for _, t := range ts {
			if t.Address == "" || t.State == "unassigned" {
				ready = false
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return wrapf(ctx.Err(), "waiting for the tablets of %s to be assigned", table)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type tabulaBenchTable struct{ t *client.Table }

var benchLatest = client.WithFilter(rowfilter.CellsPerColumnLimit(1))

func (t tabulaBenchTable) applyRow(ctx context.Context, key, value []byte, ts int64) error {
	return t.t.Apply(ctx, key, client.NewMutation().Set(benchFamily, benchColumn, ts, value))
}

func (t tabulaBenchTable) applyBatch(ctx context.Context, keys, values [][]byte, ts int64) error {
	muts := make([]*client.Mutation, len(keys))
	for i := range keys {
		muts[i] = client.NewMutation().Set(benchFamily, benchColumn, ts, values[i])
	}
	rowErrs, err := t.t.ApplyBulk(ctx, keys, muts)
	return errors.Join(append(rowErrs, err)...)
}

func (t tabulaBenchTable) readRow(ctx context.Context, key []byte) (int64, bool, error) {
	row, err := t.t.ReadRow(ctx, key, benchLatest)
	if err != nil {
		return 0, false, err
	}
	var n int64
	for _, c := range row.Cells {
		n += int64(len(c.Value))
	}
	return n, len(row.Cells) > 0, nil
}

func (t tabulaBenchTable) scan(ctx context.Context, lo, hi []byte, row func(int64)) error {
	// Each row is counted and dropped before the next: the rows may point
	// into the received messages (ReuseRows), as a careful reader's do.
	it := t.t.ReadRows(ctx, client.NewRange(lo, hi), benchLatest, client.ReuseRows())
	defer it.Close()
	for it.Next() {
		var n int64
		for _, c := range it.Row().Cells {
			n += int64(len(c.Value))
		}
		row(n)
	}
	return it.Err()
}
