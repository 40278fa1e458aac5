package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
)

// TestVerifyOnASlowThrottlingStore runs a short `tabula verify run
// --object-store` with only the store's faults: SeaweedFS restarted, its
// answers held back seconds, every request throttled with 503 SlowDown,
// and connections cut before the store and in its answer, each at least
// once (`make soak` runs every fault three times and more). Any lost
// acknowledged write, phantom, anomaly or unrecovered fault fails it; the
// report gives each fault's unavailability after the repair. The fault
// sequence follows -seed.
func TestVerifyOnASlowThrottlingStore(t *testing.T) {
	slow(t)
	seaweedtest.Need(t)
	out := verifyRun(t, "slowstore", 5*time.Minute, []string{"--object-store",
		"--faults", "store-restart,store-slow,store-throttle,store-cut",
		"--duration", "5s",
		"--min-faults-per-kind", "1",
		"--fault-interval", "1s",
		"--recovery-timeout", "1m",
		"--writers", "4",
	}, nil)
	if !strings.Contains(out, "after repair p50 / max") {
		t.Errorf("the report has no column for the unavailability after the repair")
	}
	for _, k := range []string{"store-restart", "store-slow", "store-throttle", "store-cut"} {
		// kind, count, the "p50 / max" columns, nothing unrecovered.
		row := regexp.MustCompile(`(?m)^  ` + k + ` +[1-9][0-9]*( +\S+ / \S+){4} +0$`)
		if !row.MatchString(out) {
			t.Errorf("the report has no line for %s with its unavailability and nothing unrecovered", k)
		}
	}
}
