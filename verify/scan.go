package verify

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
)

// ScanTable reads every row of tbl, every version of every cell, in key
// order, and passes each to fn. A scan that fails part way (the cluster is
// still recovering) resumes after the last row it returned, until ctx
// ends; an error that retrying cannot change (NOT_FOUND: no such table)
// ends it at once.
func ScanTable(ctx context.Context, tbl *client.Table, fn func(client.Row) error) error {
	var last []byte
	for attempt := 0; ; attempt++ {
		rs := client.InfiniteRange(nil)
		if last != nil {
			rs = client.InfiniteRange(append(append([]byte{}, last...), 0))
		}
		it := tbl.ReadRows(ctx, rs)
		for it.Next() {
			r := it.Row()
			last = r.Key
			if err := fn(r); err != nil {
				it.Close()
				return err
			}
		}
		err := it.Err()
		it.Close()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || permanent(err) {
			// Out of time, or an answer that retrying will not change (no
			// such table, say).
			return fmt.Errorf("verify: reading table %s after row %q: %w", tbl.Name(), last, err)
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("verify: reading table %s after row %q: %w", tbl.Name(), last, err)
		case <-t.C:
		}
	}
}

// Check reads the history at path and the whole of tbl, and checks one
// against the other.
func Check(ctx context.Context, tbl *client.Table, historyPath string, o CheckOptions) (*Report, error) {
	h, err := ReadHistory(historyPath)
	if err != nil {
		return nil, err
	}
	if len(h.Sessions) == 0 {
		return nil, fmt.Errorf("verify: history %s holds no session; run `tabula verify ingest` first", historyPath)
	}
	c := NewChecker(h, o)
	if err := ScanTable(ctx, tbl, func(r client.Row) error { c.Observe(r); return nil }); err != nil {
		return nil, err
	}
	return c.Finish(), nil
}

// permanent reports whether a read error is an answer that retrying will
// not change.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.Unimplemented, codes.OutOfRange:
		return true
	}
	return false
}
