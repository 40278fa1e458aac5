package client_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// These examples need a running cluster (tabula dev), so they have no
// Output comments: go test compiles them but does not run them.

func ExampleNewClient() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000", "127.0.0.1:7001") // leader and standby
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	tbl := c.Open("users")
	fmt.Println(tbl.Name())
}

func ExampleAdminClient_CreateTable() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fams := []families.Family{families.Default("info"), {Name: "events", MaxVersions: 1}}
	split := [][]byte{[]byte("user5")} // two tablets: [, user5) and [user5, )
	if err := c.Admin().CreateTable(ctx, "users", fams, split); status.Code(err) == codes.AlreadyExists {
		fmt.Println("table exists")
	} else if err != nil {
		log.Fatal(err)
	}
	info, err := c.Admin().DescribeTable(ctx, "users")
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range info.Tablets {
		fmt.Printf("%s [%q, %q) on %s\n", t.ID, t.Start, t.End, t.Address)
	}
}

func ExampleTable_Apply() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	m := client.NewMutation().
		Set("info", []byte("name"), client.ServerTime, []byte("Ada")).
		Set("info", []byte("born"), 1_700_000_000_000_000, []byte("1815")).
		DeleteColumn("info", []byte("nickname"))
	if err := c.Open("users").Apply(ctx, []byte("user42"), m); err != nil {
		log.Fatal(err)
	}
}

func ExampleMutation_AddToCell() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// An aggregate family: its cells are int64 sums, fixed at creation.
	hits := families.Default("hits")
	hits.ValueType = families.Sum
	if err := c.Admin().CreateTable(ctx, "stats", []families.Family{hits}, nil); err != nil && status.Code(err) != codes.AlreadyExists {
		log.Fatal(err)
	}
	tbl := c.Open("stats")
	day := int64(1_700_006_400_000_000) // one cell per day: its timestamp names it
	m := client.NewMutation().AddToCell("hits", []byte("views"), day, 1).AddToCell("hits", []byte("bytes"), day, 5120)
	// Not idempotent: an error whose outcome is unknown is not retried.
	if err := tbl.Apply(ctx, []byte("page1"), m); err != nil {
		log.Fatal(err)
	}
	row, err := tbl.ReadRow(ctx, []byte("page1"))
	if err != nil {
		log.Fatal(err)
	}
	for _, cl := range row.Cells { // one cell per (column, timestamp)
		n, _ := families.DecodeAggregate(cl.Value)
		fmt.Printf("%s:%s@%d = %d\n", cl.Family, cl.Qualifier, cl.Timestamp, n)
	}
}

func ExampleTable_ReadRow() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	row, err := c.Open("users").ReadRow(ctx, []byte("user42"),
		client.WithFilter(rowfilter.CellsPerColumnLimit(1))) // newest version only
	if err != nil {
		log.Fatal(err)
	}
	for _, cl := range row.Cells {
		fmt.Printf("%s:%s = %s\n", cl.Family, cl.Qualifier, cl.Value)
	}
}

func ExampleTable_ReadRows() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	it := c.Open("users").ReadRows(ctx, client.PrefixRange([]byte("user")),
		client.WithFilter(rowfilter.Chain(rowfilter.Family("info"), rowfilter.StripValue())),
		client.LimitRows(100))
	defer it.Close()
	for it.Next() {
		fmt.Println(string(it.Row().Key), len(it.Row().Cells))
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
}

func ExampleTable_ApplyBulk() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var rows [][]byte
	var muts []*client.Mutation
	for i := 0; i < 100; i++ {
		rows = append(rows, []byte(fmt.Sprintf("user%03d", i)))
		muts = append(muts, client.NewMutation().Set("info", []byte("n"), 1, []byte(fmt.Sprint(i))))
	}
	errs, err := c.Open("users").ApplyBulk(ctx, rows, muts)
	if err != nil {
		log.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			fmt.Printf("row %s: %v\n", rows[i], e)
		}
	}
}

func ExampleTable_CheckAndMutate() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Claim the row only if nobody holds the lock column yet.
	lock := rowfilter.Chain(rowfilter.Family("info"), rowfilter.QualifierRegex("lock"))
	matched, err := c.Open("users").CheckAndMutate(ctx, []byte("user42"), lock,
		nil, client.NewMutation().Set("info", []byte("lock"), 1, []byte("me")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("already locked:", matched)
}

func ExampleTable_ReadModifyWrite() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	row, err := c.Open("users").ReadModifyWrite(ctx, []byte("user42"),
		client.NewReadModifyWrite().Increment("info", []byte("visits"), 1).Append("info", []byte("log"), []byte(";login")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(row.Cells))
}

func ExampleTable_SampleRowKeys() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	samples, err := c.Open("users").SampleRowKeys(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range samples {
		fmt.Printf("%q at %d bytes\n", s.Key, s.OffsetBytes)
	}
}

// One worker per key range of about 256 MiB, finer than the tablets.
func ExampleTable_KeyRanges() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	tbl := c.Open("users")
	ranges, err := tbl.KeyRanges(ctx, nil, nil, 256<<20)
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range ranges {
		wg.Go(func() {
			it := tbl.ReadRows(ctx, client.NewRange(r.Start, r.End))
			defer it.Close()
			for it.Next() {
				_ = it.Row() // work on the row
			}
			if err := it.Err(); err != nil {
				log.Printf("range [%q, %q): %v", r.Start, r.End, err)
			}
		})
	}
	wg.Wait()
}

func ExampleAdminClient_Servers() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	servers, err := c.Admin().Servers(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range servers {
		fmt.Println(s.ID, s.Address, s.Tablets)
	}
}

// A state change applied once however often it is retried: the mutation
// applies only while the order's newest state is "paid" (docs/SCHEMA-DESIGN.md).
func ExampleTable_CheckAndMutate_stateTransition() {
	ctx := context.Background()
	c, err := client.NewClient(ctx, "127.0.0.1:7000")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	orders := c.Open("orders")
	paid := rowfilter.Chain(rowfilter.Family("o"), rowfilter.QualifierRegex("state"),
		rowfilter.CellsPerColumnLimit(1), rowfilter.ValueRegex("paid"))
	ship := client.NewMutation().
		Set("o", []byte("state"), client.ServerTime, []byte("shipped")).
		Set("o", []byte("tracking"), client.ServerTime, []byte("1Z999"))
	moved, err := orders.CheckAndMutate(ctx, []byte("order#1001"), paid, ship, nil)
	if err != nil {
		log.Fatal(err)
	}
	// moved is false when the order was not "paid" any more (shipped by an
	// earlier try, or cancelled): nothing was written.
	fmt.Println("shipped now:", moved)
}
