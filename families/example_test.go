package families_test

import (
	"fmt"
	"time"

	"github.com/tabuladb/tabula/families"
)

func Example() {
	f, err := families.Parse("metrics:versions=2,ttl=7d,compression=zstd")
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Spec(), f.Bloom)

	now := time.Date(2025, 1, 10, 0, 0, 0, 0, time.UTC).UnixMicro()
	p := f.Policy(now)
	// The versions of one column, newest first.
	for i, ts := range []int64{now - 1, now - 2, now - 8*24*time.Hour.Microseconds()} {
		fmt.Println(i, p.Condemned(ts, i))
	}

	f, _ = families.ApplyOptions(f, "gc=intersection,versions=1")
	fmt.Println(f.Spec())
	// Output:
	// metrics:versions=2,ttl=7d,compression=zstd row
	// 0 false
	// 1 false
	// 2 true
	// metrics:versions=1,ttl=7d,gc=intersection,compression=zstd
}

func ExampleGCRule() {
	// Keep at most 3 versions, and only the newest one past a week.
	f, err := families.Parse("events:gc=union(versions=3,intersection(age=7d,versions=1))")
	if err != nil {
		panic(err)
	}
	fmt.Println(f.GCRule)

	now := time.Date(2025, 1, 10, 0, 0, 0, 0, time.UTC).UnixMicro()
	week := 7 * 24 * time.Hour.Microseconds()
	p := f.Policy(now)
	// The versions of one column, newest first.
	for i, ts := range []int64{now - 1, now - week - 1, now - week - 2} {
		fmt.Println(i, p.Condemned(ts, i))
	}
	// Output:
	// union(versions=3,intersection(age=7d,versions=1))
	// 0 false
	// 1 true
	// 2 true
}
