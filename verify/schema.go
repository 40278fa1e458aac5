package verify

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// The verify table has one family per workload. Every family keeps every
// version (MaxVersions 0), so the checker sees each write a counter or a
// chain received, not only the newest.
//
//	list node     row: 16 hex digits (random, spread over the key space)
//	              l:prev = the previous node's row ("" for the first)
//	              l:p    = payload derived from the row key
//	              all at timestamp listTimestamp (idempotent: retried)
//	counter       row: <2 hex>-ctr-<session>-<generation>-<index>
//	              c:n = 8-byte big-endian int64, one version per increment
//	chain         row: <2 hex>-cas-<session>-<generation>-<index>
//	              s:s = "<step, 12 digits>/<token>", one version per step,
//	              stamped with the server's clock
const (
	familyList    = "l"
	familyCounter = "c"
	familyChain   = "s"

	listTimestamp = int64(1)
)

var (
	qualPrev    = []byte("prev")
	qualPayload = []byte("p")
	qualCount   = []byte("n")
	qualStep    = []byte("s")
)

// listKey draws a list node's row key: 16 random hex digits.
func listKey(r uint64) string { return fmt.Sprintf("%016x", r) }

// isListKey reports whether row has the form listKey makes.
func isListKey(row string) bool {
	if len(row) != 16 {
		return false
	}
	for i := 0; i < len(row); i++ {
		c := row[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// payload is a list node's l:p value: size bytes derived from its row, so
// the checker can tell a damaged value.
func payload(row string, size int) []byte {
	h := fnv.New64a()
	h.Write([]byte(row))
	x := h.Sum64()
	b := make([]byte, size)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = 'a' + byte(x%26)
	}
	return b
}

// sharedRow names the index-th counter or chain row of a session's
// generation; a hash prefix spreads them over the tablets.
func sharedRow(kind, session string, gen, index int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d/%d", kind, session, gen, index)
	return fmt.Sprintf("%02x-%s-%s-%05d-%d", h.Sum32()&0xff, kind, session, gen, index)
}

func counterRow(session string, gen, index int) string {
	return sharedRow("ctr", session, gen, index)
}

func chainRow(session string, gen, index int) string {
	return sharedRow("cas", session, gen, index)
}

// encodeCount is a counter's value as ReadModifyWrite keeps it.
func encodeCount(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// decodeCount reads a counter value.
func decodeCount(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("counter value of %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// encodeStep is a chain step's value.
func encodeStep(step int64, token string) []byte {
	return []byte(fmt.Sprintf("%012d/%s", step, token))
}

// stepPattern is the value regex that matches step's values.
func stepPattern(step int64) string { return fmt.Sprintf("%012d/.*", step) }

// decodeStep reads a chain step's value.
func decodeStep(b []byte) (step int64, token string, err error) {
	s := string(b)
	i := strings.IndexByte(s, '/')
	if i != 12 {
		return 0, "", fmt.Errorf("chain value %q is not <12 digits>/<token>", s)
	}
	step, err = strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("chain value %q: %v", s, err)
	}
	return step, s[i+1:], nil
}

// TableOptions shape the verify table when EnsureTable creates it.
type TableOptions struct {
	// SplitThreshold is the table's split threshold in bytes; 0 is the
	// cluster's default. The default is 0.
	SplitThreshold int64
	// SplitKeys pre-split the table. The default is none.
	SplitKeys []string
}

// EnsureTable creates the verify table with its families unless a table of
// that name exists; it reports whether it created it.
func EnsureTable(ctx context.Context, admin *client.AdminClient, table string, o TableOptions) (bool, error) {
	var keys [][]byte
	for _, k := range o.SplitKeys {
		keys = append(keys, []byte(k))
	}
	fams := []families.Family{families.Default(familyList), families.Default(familyCounter), families.Default(familyChain)}
	err := admin.CreateTableWithInfo(ctx, client.TableInfo{Name: table, Families: fams, SplitThreshold: o.SplitThreshold}, keys)
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.AlreadyExists:
		info, err := admin.DescribeTable(ctx, table)
		if err != nil {
			return false, fmt.Errorf("verify: describing table %s: %w", table, err)
		}
		have := map[string]bool{}
		for _, f := range info.Families {
			have[f.Name] = true
		}
		for _, f := range fams {
			if !have[f.Name] {
				return false, fmt.Errorf("verify: table %s exists without family %s; use another --table", table, f.Name)
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("verify: creating table %s: %w", table, err)
}
