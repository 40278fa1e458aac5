package meta

import (
	"fmt"
	"strconv"
	"strings"
)

// Shared commit logs are named after the etcd lease their tablet server
// registered under: "<lease as 16 hex digits>-<n>", n counting the logs
// the server started under that lease. The master's GC keeps every log
// whose lease is still alive (the server may still write it) or that a
// tablet's manifest names (docs/CONTRACTS.md §3).

// LogName returns the name of the n-th shared commit log of lease.
func LogName(lease int64, n int) string { return fmt.Sprintf("%016x-%d", uint64(lease), n) }

// LogLease returns the lease a shared commit log's name starts with, and
// false for a name that is not one LogName makes.
func LogLease(name string) (int64, bool) {
	hex, n, ok := strings.Cut(name, "-")
	if !ok || len(hex) != 16 {
		return 0, false
	}
	if _, err := strconv.ParseUint(n, 10, 31); err != nil {
		return 0, false
	}
	lease, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0, false
	}
	return int64(lease), true
}
