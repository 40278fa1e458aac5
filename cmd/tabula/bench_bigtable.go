package main

import (
	"context"
	"errors"

	"cloud.google.com/go/bigtable"
	"cloud.google.com/go/bigtable/bttest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// The project and instance the official client names; the gateway maps
// every instance to its cluster and the emulator accepts any.
const (
	benchProject  = "tabula-bench"
	benchInstance = "tabula"
)

// maxBigtableMsg is what the connection to a Bigtable endpoint takes and
// sends: the gateway's limit. Through BIGTABLE_EMULATOR_HOST the Go client
// would dial with gRPC's 4 MiB default (docs/GATEWAY.md).
const maxBigtableMsg = 256 << 20

// bigtableBench is the official Cloud Bigtable Go client on one plaintext
// connection, to Tabula's gateway or to the emulator.
type bigtableBench struct {
	conn  *grpc.ClientConn
	data  *bigtable.Client
	admin *bigtable.AdminClient
	stop  func() // stops an in-process emulator, if any
}

// dialBigtableBench connects the official client to addr; stop, if not
// nil, is called by close after the connection is closed.
func dialBigtableBench(ctx context.Context, addr string, stop func()) (*bigtableBench, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxBigtableMsg), grpc.MaxCallSendMsgSize(maxBigtableMsg)))
	if err != nil {
		return nil, wrapf(err, "--bigtable-addr %s", addr)
	}
	// No metrics export to Cloud Monitoring and no session data plane:
	// neither exists off Google Cloud.
	cfg := bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}, DisableSession: true}
	data, err := bigtable.NewClientWithConfig(ctx, benchProject, benchInstance, cfg, option.WithGRPCConn(conn))
	if err != nil {
		conn.Close()
		return nil, wrapf(err, "Bigtable client for %s", addr)
	}
	admin, err := bigtable.NewAdminClient(ctx, benchProject, benchInstance, option.WithGRPCConn(conn))
	if err != nil {
		data.Close()
		conn.Close()
		return nil, wrapf(err, "Bigtable admin client for %s", addr)
	}
	return &bigtableBench{conn: conn, data: data, admin: admin, stop: stop}, nil
}

// startEmulatorBench starts the Bigtable emulator (bttest, in memory) on
// loopback in this process and connects the official client to it.
func startEmulatorBench(ctx context.Context) (*bigtableBench, string, error) {
	srv, err := bttest.NewServer("127.0.0.1:0", grpc.MaxRecvMsgSize(maxBigtableMsg), grpc.MaxSendMsgSize(maxBigtableMsg))
	if err != nil {
		return nil, "", wrapf(err, "starting the Bigtable emulator")
	}
	b, err := dialBigtableBench(ctx, srv.Addr, srv.Close)
	if err != nil {
		srv.Close()
		return nil, "", err
	}
	return b, srv.Addr, nil
}

func (b *bigtableBench) createTable(ctx context.Context, table string, splits [][]byte) (bool, error) {
	keys := make([]string, len(splits))
	for i, s := range splits {
		keys[i] = string(s)
	}
	err := b.admin.CreateTableFromConf(ctx, &bigtable.TableConf{
		TableID:        table,
		SplitKeys:      keys,
		ColumnFamilies: map[string]bigtable.Family{benchFamily: {GCPolicy: bigtable.NoGcPolicy()}},
	})
	if status.Code(err) == codes.AlreadyExists || status.Code(errors.Unwrap(err)) == codes.AlreadyExists {
		return false, nil
	}
	return err == nil, err
}

func (b *bigtableBench) deleteTable(ctx context.Context, table string) error {
	return b.admin.DeleteTable(ctx, table)
}

func (b *bigtableBench) open(table string) benchTable { return bigtableBenchTable{b.data.Open(table)} }

func (b *bigtableBench) close() {
	b.admin.Close()
	b.data.Close()
	b.conn.Close()
	if b.stop != nil {
		b.stop()
	}
}

type bigtableBenchTable struct{ t *bigtable.Table }

var bigtableLatest = bigtable.RowFilter(bigtable.LatestNFilter(1))

func bigtableSet(value []byte, ts int64) *bigtable.Mutation {
	m := bigtable.NewMutation()
	m.Set(benchFamily, string(benchColumn), bigtable.Timestamp(ts), value)
	return m
}

func (t bigtableBenchTable) applyRow(ctx context.Context, key, value []byte, ts int64) error {
	return t.t.Apply(ctx, string(key), bigtableSet(value, ts))
}

func (t bigtableBenchTable) applyBatch(ctx context.Context, keys, values [][]byte, ts int64) error {
	rows := make([]string, len(keys))
	muts := make([]*bigtable.Mutation, len(keys))
	for i := range keys {
		rows[i] = string(keys[i])
		muts[i] = bigtableSet(values[i], ts)
	}
	rowErrs, err := t.t.ApplyBulk(ctx, rows, muts)
	return errors.Join(append(rowErrs, err)...)
}

func bigtableRowSize(r bigtable.Row) int64 {
	var n int64
	for _, items := range r {
		for _, it := range items {
			n += int64(len(it.Value))
		}
	}
	return n
}

func (t bigtableBenchTable) readRow(ctx context.Context, key []byte) (int64, bool, error) {
	r, err := t.t.ReadRow(ctx, string(key), bigtableLatest)
	if err != nil {
		return 0, false, err
	}
	return bigtableRowSize(r), len(r) > 0, nil
}

func (t bigtableBenchTable) scan(ctx context.Context, lo, hi []byte, row func(int64)) error {
	return t.t.ReadRows(ctx, bigtable.NewRange(string(lo), string(hi)), func(r bigtable.Row) bool {
		row(bigtableRowSize(r))
		return true
	}, bigtableLatest)
}
