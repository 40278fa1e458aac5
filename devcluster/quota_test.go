package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/quota"
	"github.com/tabuladb/tabula/statuspage"
)

// setQuota sets a quota as "tabula quota set" does (the master's
// Quotas service, as the cluster's admin) and waits until every server
// enforces it.
func setQuota(ctx context.Context, t *testing.T, c *Cluster, admin *client.Client, k quota.Key, r meta.QuotaRecord) {
	t.Helper()
	q := client.QuotaInfo{Scope: string(k.Scope), Name: k.Name, ReadRequests: r.ReadRequests, ReadBytes: r.ReadBytes,
		WriteRequests: r.WriteRequests, WriteBytes: r.WriteBytes, SpaceBytes: r.SpaceBytes}
	if err := admin.Admin().SetQuota(ctx, q); err != nil {
		t.Fatal(err)
	}
	for _, ts := range c.Servers() {
		for !holds(ts.Quotas(), k, r) {
			if ctx.Err() != nil {
				t.Fatalf("server %s never followed the quota of %s", ts.ID(), k)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func holds(in []quota.Info, k quota.Key, r meta.QuotaRecord) bool {
	for _, q := range in {
		if q.Key == k && q.Limits == r {
			return true
		}
	}
	return false
}

// refusals records the quota refusals a client's calls got from the
// servers (the client retries them: the caller sees only the outcome).
type refusals struct {
	mu      sync.Mutex
	n       int
	noDelay int
}

func (r *refusals) interceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.ResourceExhausted {
			delay := false
			for _, d := range status.Convert(err).Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
					delay = true
				}
			}
			r.mu.Lock()
			r.n++
			if !delay {
				r.noDelay++
			}
			r.mu.Unlock()
		}
		return err
	}
}

func (r *refusals) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.noDelay
}

// A principal over its write quota gets RESOURCE_EXHAUSTED with a retry
// delay; Tabula's client waits it and sends the write again, so every
// write, even one that is not idempotent (server timestamps), is
// acknowledged once and readable; an unthrottled principal writing to the
// same table meanwhile is never refused.
func TestQuotaThrottledPrincipalLosesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, Auth: true})
	if err := admin.Admin().CreateTable(ctx, "q", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "batch", Table: "q", Role: "write"}); err != nil {
		t.Fatal(err)
	}
	token, _, err := admin.Admin().CreateToken(ctx, "batch", "quota test")
	if err != nil {
		t.Fatal(err)
	}
	const rate = 5 // writes a second: a burst of 5
	setQuota(ctx, t, c, admin, quota.Key{Scope: quota.Principal, Name: "batch"}, meta.QuotaRecord{WriteRequests: rate})
	connect := func(token string, r *refusals) *client.Table {
		cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: token,
			RetryTimeout: time.Minute, DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(r.interceptor())}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli.Open("q")
	}
	var batchRefused, appRefused refusals
	batch, app := connect(token, &batchRefused), connect(c.AdminToken(), &appRefused)
	// The throttled principal cannot lift its own quota, nor set its
	// table's: that needs admin (the cluster's for a principal's quota).
	self, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { self.Close() })
	for what, err := range map[string]error{
		"raises its quota":       self.Admin().SetQuota(ctx, client.QuotaInfo{Scope: "principal", Name: "batch", WriteRequests: 1e6}),
		"removes its quota":      self.Admin().RemoveQuota(ctx, "principal", "batch"),
		"sets its table's quota": self.Admin().SetQuota(ctx, client.QuotaInfo{Scope: "table", Name: "q", WriteRequests: 1e6}),
	} {
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("the throttled principal %s: %v, want PERMISSION_DENIED", what, err)
		}
	}
	if qs, err := self.Admin().ListQuotas(ctx); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the throttled principal (write on one table) lists quotas: %v %v, want PERMISSION_DENIED (read on the cluster needed)", qs, err)
	}

	// 4 writers of 5 rows each (20 > the burst of 5 in well under the
	// 3s 20 writes take at 5/s), then a MutateRows of 10 rows; the
	// admin writes alongside.
	const writers, perWriter, bulk = 4, 5, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				row := fmt.Appendf(nil, "b-%d-%d", w, i)
				m := client.NewMutation().Set("cf", []byte("q"), client.ServerTime, row)
				if err := batch.Apply(ctx, row, m); err != nil {
					errs <- fmt.Errorf("batch write %s: %w", row, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 20 {
			row := fmt.Appendf(nil, "a-%d", i)
			if err := app.Apply(ctx, row, client.NewMutation().Set("cf", []byte("q"), client.ServerTime, row)); err != nil {
				errs <- fmt.Errorf("app write %s: %w", row, err)
				return
			}
		}
	})
	wg.Wait()
	var rows [][]byte
	var muts []*client.Mutation
	for i := range bulk {
		row := fmt.Appendf(nil, "bulk-%d", i)
		rows, muts = append(rows, row), append(muts, client.NewMutation().Set("cf", []byte("q"), client.ServerTime, row))
	}
	if entryErrs, err := batch.ApplyBulk(ctx, rows, muts); err != nil || errors.Join(entryErrs...) != nil {
		t.Fatalf("the bulk write: %v %v", err, errors.Join(entryErrs...))
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, noDelay := batchRefused.counts()
	if n == 0 || noDelay != 0 {
		t.Fatalf("the throttled principal's calls were refused %d times (%d without a RetryInfo delay); want some, all with a delay", n, noDelay)
	}
	if n, _ := appRefused.counts(); n != 0 {
		t.Fatalf("the unthrottled principal was refused %d times", n)
	}
	// Every acknowledged write is there, once.
	want := map[string]bool{}
	for w := range writers {
		for i := range perWriter {
			want[fmt.Sprintf("b-%d-%d", w, i)] = true
		}
	}
	for i := range bulk {
		want[fmt.Sprintf("bulk-%d", i)] = true
	}
	for i := range 20 {
		want[fmt.Sprintf("a-%d", i)] = true
	}
	it := app.ReadRows(ctx, client.NewRange(nil, nil))
	defer it.Close()
	for it.Next() {
		r := it.Row()
		if len(r.Cells) != 1 || string(r.Cells[0].Value) != string(r.Key) {
			t.Fatalf("row %s holds %d cells (want its one write, once)", r.Key, len(r.Cells))
		}
		delete(want, string(r.Key))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) != 0 {
		t.Fatalf("acknowledged writes missing: %v", want)
	}
	t.Logf("the throttled principal's calls were refused %d times", n)
}

// A table past its space quota refuses writes that store data (never
// losing what it holds), accepts deletes, and accepts writes again once
// deletes and a major compaction brought its size under the limit.
func TestQuotaSpaceRefusesThenAcceptsAfterDeleteAndCompaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, LoadInterval: 100 * time.Millisecond})
	if err := admin.Admin().CreateTable(ctx, "s", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	const limit, value = 64 << 10, 8 << 10
	k := quota.Key{Scope: quota.Table, Name: "s"}
	setQuota(ctx, t, c, admin, k, meta.QuotaRecord{SpaceBytes: limit})
	tbl := admin.Open("s")
	put := func(i int) error {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second) // shorter than the refusal's delay: it comes back at once
		defer cancel()
		row := fmt.Appendf(nil, "r%04d", i)
		return tbl.Apply(wctx, row, client.NewMutation().Set("cf", []byte("q"), 1, make([]byte, value)))
	}
	var written []int
	var refused error
	for i := 0; refused == nil; i++ {
		err := put(i)
		switch {
		case err == nil:
			written = append(written, i)
			if len(written)*value > 4*limit {
				t.Fatalf("%d bytes written, 4 times the quota, and no refusal", len(written)*value)
			}
			if len(written)*value > limit {
				// The next write is refused once the server knows the
				// table is past its quota (a load report, the master's
				// publication of the size, the watch): wait for that, not
				// for a time (on a fast machine writes outran it).
				waitUsagePast(ctx, t, c, k, limit)
			}
		case status.Code(err) == codes.ResourceExhausted:
			refused = err
		default:
			t.Fatal(err)
		}
	}
	if _, ok := retryInfo(refused); !ok {
		t.Fatalf("the space refusal has no RetryInfo: %v", refused)
	}
	// The server's status page shows the quota and its use.
	rec := httptest.NewRecorder()
	statuspage.NewServerPage(c.Servers()[0], "").ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if page := rec.Body.String(); !strings.Contains(page, "Quotas this server enforces") || !strings.Contains(page, "64.0 KiB") {
		t.Fatalf("the status page does not show the space quota:\n%s", page)
	}
	t.Logf("refused after %d rows (%d bytes): %v", len(written), len(written)*value, refused)
	// Nothing written is lost.
	for _, i := range written {
		r, err := tbl.ReadRow(ctx, fmt.Appendf(nil, "r%04d", i))
		if err != nil || len(r.Cells) != 1 {
			t.Fatalf("row %d, written before the refusal: %v, %d cells", i, err, len(r.Cells))
		}
	}
	// Deletes are accepted past the quota; a major compaction drops the
	// data; the next load report shows it.
	for _, i := range written {
		if err := tbl.Apply(ctx, fmt.Appendf(nil, "r%04d", i), client.NewMutation().DeleteRow()); err != nil {
			t.Fatalf("deleting row %d past the space quota: %v", i, err)
		}
	}
	if err := admin.Admin().CompactTable(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	for {
		err := put(100000)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || ctx.Err() != nil {
			t.Fatalf("a write after the deletes and the compaction: %v (quotas: %+v)", err, c.Servers()[0].Quotas())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func retryInfo(err error) (time.Duration, bool) {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// waitUsagePast waits until the first server's limiter holds a published
// usage of k above limit.
func waitUsagePast(ctx context.Context, t *testing.T, c *Cluster, k quota.Key, limit int64) {
	t.Helper()
	for {
		for _, q := range c.Servers()[0].Quotas() {
			if q.Key == k && q.Usage > limit {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server never saw %v's usage past %d bytes: %+v", k, limit, c.Servers()[0].Quotas())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
