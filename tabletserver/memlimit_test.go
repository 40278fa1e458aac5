package tabletserver

import (
	"errors"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// The Go memory limit is the memtable hard limit plus the block cache,
// plus a quarter of that and never less than 64 MiB, from the options as
// the server fills their defaults.
func TestGoMemoryLimitIsTheBudgetsPlusHeadroom(t *testing.T) {
	base := Options{DataDir: t.TempDir(), Etcd: []string{"127.0.0.1:2379"}}
	for _, c := range []struct {
		name        string
		hard, cache int64
		want        int64
	}{
		{"defaults: 512 MiB of memtables, 64 MiB of cache", 0, 0, (512 + 64) * 5 / 4 << 20},
		{"small budgets get 64 MiB of headroom", 8 << 20, 8 << 20, (16 + 64) << 20},
		{"large budgets get a quarter", 4 << 30, 1 << 30, 5 << 30 * 5 / 4},
	} {
		o := base
		o.MemtableSoftLimit, o.MemtableHardLimit, o.CacheBytes = min(c.hard, 256<<20), c.hard, c.cache
		got, err := GoMemoryLimit(o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: GoMemoryLimit = %d MiB, want %d MiB", c.name, got>>20, c.want>>20)
		}
	}
	bad := base
	bad.CacheBytes = -1
	if _, err := GoMemoryLimit(bad); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("negative cache: err = %v, want one wrapping cell.ErrInvalid", err)
	}
}
