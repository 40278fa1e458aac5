// Package client is Tabula's Go client library (docs/CONTRACTS.md §6). A Client
// finds tablets through the masters (package locator, cached) and talks
// to the tablet servers directly; range scans span tablets transparently
// and come back in key order, or in descending order with Reverse (the
// latest rows of a prefix: ReadRows(ctx, PrefixRange(p), Reverse(),
// LimitRows(1))).
//
//	c, err := client.NewClient(ctx, "127.0.0.1:7000")
//	if err != nil { ... }
//	defer c.Close()
//	tbl := c.Open("users")
//	m := client.NewMutation().Set("info", []byte("name"), client.ServerTime, []byte("Ada"))
//	if err := tbl.Apply(ctx, []byte("user42"), m); err != nil { ... }
//	it := tbl.ReadRows(ctx, client.PrefixRange([]byte("user")), client.LimitRows(10))
//	defer it.Close()
//	for it.Next() {
//		row := it.Row()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// Errors are gRPC status errors carrying the server's message; inspect
// them with status.Code: NOT_FOUND (no such table or family),
// INVALID_ARGUMENT (bad request), RESOURCE_EXHAUSTED (back-pressure),
// UNAVAILABLE (transient), DEADLINE_EXCEEDED or CANCELED; INTERNAL means
// a server found damaged data (the message names the file) and UNKNOWN a
// failure it could not classify, whose write may or may not have been
// applied. Neither of the last two is retried.
//
// Retries follow docs/CONTRACTS.md §5: reads are always retried; a mutation is
// retried after UNAVAILABLE or RESOURCE_EXHAUSTED only when it is
// idempotent (every cell carries an explicit timestamp, cell.Idempotent).
// A "not serving" answer (FAILED_PRECONDITION with a NotServing detail:
// the tablet moved or split) is a refusal given before the request is
// applied, so the client re-locates and retries every kind of request
// after it. Retries back off exponentially with jitter and stop when the
// context ends or Options.RetryTimeout has passed.
//
// Each attempt at a tablet server is bounded by Options.AttemptTimeout
// (default 10s; for read streams, the wait for each message): a server
// that hangs (paused, partitioned) fails the attempt with UNAVAILABLE, and
// the client re-locates and retries it when that is safe, instead of
// stalling until the server wakes. The bound is the client's own timer,
// not a deadline sent to the server (the caller's deadline is sent as
// usual): an attempt that runs out is cancelled, which the server sees.
// Connections to tablet servers also send keepalive pings
// (Options.KeepaliveTime).
//
// An idempotent call (a read, SampleRowKeys, an Apply whose cells all carry
// explicit timestamps, a request of ApplyBulk holding only such rows) that
// has waited Options.LocationCheckDelay (default 500ms) asks a master
// whether its tablet is still where it was sent, and asks again at that
// interval while it waits. If the tablet has moved (off a server paused
// past its lease, say), the call is abandoned and sent to the new owner at
// once, a scan resuming after its last row; if not, it keeps waiting, since
// a tablet has a single owner and there is no copy to hedge to. Calls that
// are not idempotent (ServerTime cells, CheckAndMutate, ReadModifyWrite,
// ApplyBulk's requests of such rows) are never checked nor sent again while
// an attempt is outstanding: they wait for an answer or for AttemptTimeout,
// so that their outcome is not made unknown more often.
//
// A Client, its Tables and its AdminClient are safe for concurrent use; a
// RowIterator is not.
package client
