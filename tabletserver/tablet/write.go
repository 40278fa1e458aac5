package tablet

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sort"
	"sync"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

var rowLockSeed = maphash.MakeSeed()

// lockRow locks row's stripe and returns it, to unlock. (Not an unlock
// function: a method value allocates, on every write.)
func (t *Tablet) lockRow(row []byte) *sync.Mutex {
	mu := &t.rowLocks[maphash.Bytes(rowLockSeed, row)%rowLockStripes]
	mu.Lock()
	return mu
}

// checkMutations validates a row's mutations against the limits, the schema
// and the tablet's range. onlyFields allows an empty list.
func (t *Tablet) checkMutations(sch *schema, row []byte, muts []cell.Mutation, allowEmpty bool) error {
	if allowEmpty && len(muts) == 0 {
		return cell.ValidateRow(row)
	}
	if err := cell.ValidateMutations(row, muts); err != nil {
		return err
	}
	for i := range muts {
		m := &muts[i]
		if m.Kind == cell.DeleteRow {
			continue
		}
		fam := sch.byName[m.Family]
		if fam == nil {
			return fmt.Errorf("%w: %q", ErrUnknownFamily, m.Family)
		}
		if err := checkValueType(fam, m.Kind); err != nil {
			return err
		}
	}
	return t.checkRow(row)
}

func (t *Tablet) checkRow(row []byte) error {
	if err := cell.ValidateRow(row); err != nil {
		return err
	}
	if !t.inRange(row) {
		return fmt.Errorf("%w: row %q is outside [%q, %q)", ErrOutOfRange, row, t.start, t.end)
	}
	return nil
}

// enterWrite throttles a writer (the server's memory budget, then the
// tablet's own memtable: stall.go) and holds the gate shared; on success
// the caller calls t.gate.RUnlock when done. It waits before it takes the
// gate, which Split (flushing under it) and Close take exclusively.
func (t *Tablet) enterWrite(ctx context.Context) error {
	if t.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := t.opts.Memory.admit(ctx); err != nil {
		return err
	}
	if err := t.awaitRoom(ctx); err != nil {
		return err
	}
	t.gate.RLock()
	if t.closed.Load() {
		t.gate.RUnlock()
		return ErrClosed
	}
	return nil
}

// Apply applies one row's mutations atomically: a reader sees all or none
// of them. It returns once they are durable per the sync mode and visible.
func (t *Tablet) Apply(ctx context.Context, row []byte, muts []cell.Mutation) error {
	sch := t.schema.Load()
	if err := t.checkMutations(sch, row, muts, false); err != nil {
		return err
	}
	if err := t.enterWrite(ctx); err != nil {
		return err
	}
	defer t.gate.RUnlock()
	defer t.lockRow(row).Unlock()
	return t.commit(ctx, sch, row, muts)
}

// payloadPool holds buffers for commit log records being built.
var payloadPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPayload bounds the record buffers kept in payloadPool.
const maxPooledPayload = 64 << 10

// commit runs the commit pipeline for one row's mutations: under the commit
// mutex assign a sequence number, write the log record and insert into the
// memtable; then wait for durability and publish. The caller holds the row
// lock and the gate.
//
// Publishing is simply visibleSeq = max(visibleSeq, seq): the log makes
// records durable in order (an fsync covers every earlier record, Rotate
// syncs the old segment), and every earlier batch finished its memtable
// insert before this one took the commit mutex, so once this batch is
// durable every earlier one is durable and in the memtable too.
//
// A caller that gave up while the row lock was awaited or the mutations
// were normalized gets its context's error, and nothing is applied.
// serverTime returns the time that mutations asking for a server timestamp
// take, or 0 when none does: the clock is read only when needed (on a
// virtual machine a read of the wall clock cost 5 % of a small write).
func (t *Tablet) serverTime(muts []cell.Mutation) int64 {
	for i := range muts {
		if muts[i].Timestamp == cell.ServerTimestamp {
			return t.clock()
		}
	}
	return 0
}

func (t *Tablet) commit(ctx context.Context, sch *schema, row []byte, muts []cell.Mutation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var ebuf [2]entry
	if hasAggregates(muts) {
		muts = combineAggregates(muts, sch)
	}
	b := batch{row: row, entries: appendNormalized(ebuf[:0], muts, sch.names, t.serverTime(muts))}
	if len(b.entries) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The log and the memtable copy what they keep, so the record's
	// buffer goes back to the pool once both have it.
	pp := payloadPool.Get().(*[]byte)
	payload := b.encode((*pp)[:0])
	defer func() {
		if cap(payload) <= maxPooledPayload {
			*pp = payload[:0]
			payloadPool.Put(pp)
		}
	}()
	t.commitMu.Lock()
	if t.failErr != nil {
		t.commitMu.Unlock()
		return fmt.Errorf("%w: %w", ErrFailed, t.failErr)
	}
	if t.closed.Load() {
		t.commitMu.Unlock()
		return ErrClosed
	}
	// Families may have been dropped (or dropped and made again with
	// another value type) since validation: keep only current ones.
	if cur := t.schema.Load(); cur != sch {
		kept := b.entries[:0]
		for _, e := range b.entries {
			if f := cur.byName[e.family]; f != nil && f.ValueType == sch.byName[e.family].ValueType {
				kept = append(kept, e)
			}
		}
		b.entries = kept
		if len(b.entries) == 0 {
			t.commitMu.Unlock()
			return fmt.Errorf("%w: the families of this write were deleted", ErrUnknownFamily)
		}
		payload = b.encode(payload[:0])
	}
	b.seq = t.lastSeq + 1
	binary.LittleEndian.PutUint64(payload[batchSeqOffset:], b.seq)
	ticket, err := t.log.Write(payload)
	if err != nil {
		t.failErr = err
		t.commitMu.Unlock()
		err = fmt.Errorf("%w: write: %w", ErrLogFailed, err)
		t.failed(err)
		return err
	}
	t.lastSeq = b.seq
	mem := t.mem
	added := mem.insertBatchLocked(&b)
	t.commitMu.Unlock()
	t.opts.Memory.charge(added)

	if err := t.log.Wait(ticket); err != nil {
		t.commitMu.Lock()
		if t.failErr == nil {
			t.failErr = err
		}
		t.commitMu.Unlock()
		err = fmt.Errorf("%w: sync: %w", ErrLogFailed, err)
		t.failed(err)
		return err
	}
	for {
		v := t.visibleSeq.Load()
		if v >= b.seq || t.visibleSeq.CompareAndSwap(v, b.seq) {
			break
		}
	}
	if mem.bytes.Load() > t.opts.MemtableSize && !t.opts.DisableBackgroundWork {
		t.requestFlush()
	}
	return nil
}

// CheckAndMutate reads the row, and applies onTrue if predicate emits any
// cell for it (nil predicate: if the row has any cell), else onFalse;
// atomically with respect to every other write of the row. Either list may
// be empty.
func (t *Tablet) CheckAndMutate(ctx context.Context, row []byte, predicate *rowfilter.Filter, onTrue, onFalse []cell.Mutation) (matched bool, err error) {
	sch := t.schema.Load()
	if err := t.checkMutations(sch, row, onTrue, true); err != nil {
		return false, err
	}
	if err := t.checkMutations(sch, row, onFalse, true); err != nil {
		return false, err
	}
	if err := t.checkRow(row); err != nil {
		return false, err
	}
	pred, err := rowfilter.Compile(predicate)
	if err != nil {
		return false, err
	}
	if err := t.enterWrite(ctx); err != nil {
		return false, err
	}
	defer t.gate.RUnlock()
	defer t.lockRow(row).Unlock()
	cells, err := t.readRowCompiled(ctx, row, pred)
	if err != nil {
		return false, err
	}
	matched = len(cells) > 0
	muts := onFalse
	if matched {
		muts = onTrue
	}
	if len(muts) == 0 {
		return matched, nil
	}
	return matched, t.commit(ctx, sch, row, muts)
}

// ReadModifyWrite applies the rules to the newest visible cell of each
// named column, in order (a later rule on the same column sees the earlier
// one's result), writes the results atomically and returns the new cells,
// one per column, in read order. An increment reads the value as a 64-bit
// big-endian signed integer (absent = 0) and wraps on overflow. The new
// cell's timestamp is the server clock, or the old cell's timestamp when
// that is later, so the new value is always the column's newest.
func (t *Tablet) ReadModifyWrite(ctx context.Context, row []byte, rules []cell.ReadModifyWriteRule) ([]cell.Cell, error) {
	sch := t.schema.Load()
	if err := t.checkRow(row); err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, cell.Invalidf("no read-modify-write rules for row %q; give at least one", row)
	}
	for i := range rules {
		if err := rules[i].Validate(); err != nil {
			return nil, err
		}
		fam := sch.byName[rules[i].Family]
		if fam == nil {
			return nil, fmt.Errorf("%w: %q", ErrUnknownFamily, rules[i].Family)
		}
		if fam.ValueType.IsAggregate() {
			return nil, cell.Invalidf("family %s is an aggregate (%v) family: read-modify-write does not apply to it; use AddToCell", fam.Name, fam.ValueType)
		}
	}
	if err := t.enterWrite(ctx); err != nil {
		return nil, err
	}
	defer t.gate.RUnlock()
	defer t.lockRow(row).Unlock()
	cur, err := t.readRowCompiled(ctx, row, nil)
	if err != nil {
		return nil, err
	}
	type colKey struct{ family, qualifier string }
	newest := map[colKey]cell.Cell{}
	for _, c := range cur { // newest first within a column
		k := colKey{c.Family, string(c.Qualifier)}
		if _, ok := newest[k]; !ok {
			newest[k] = c
		}
	}
	now := t.clock()
	results := map[colKey]cell.Cell{}
	for i := range rules {
		r := &rules[i]
		k := colKey{r.Family, string(r.Qualifier)}
		old, ok := results[k]
		if !ok {
			old, ok = newest[k]
		}
		c := cell.Cell{Row: row, Family: r.Family, Qualifier: r.Qualifier, Timestamp: now}
		if ok && old.Timestamp > now {
			c.Timestamp = old.Timestamp
		}
		switch r.Kind {
		case cell.Increment:
			var n int64
			if ok {
				if len(old.Value) != 8 {
					return nil, cell.Invalidf("cannot increment %s:%q of row %q: its value is %d bytes, not an 8-byte big-endian int64", r.Family, r.Qualifier, row, len(old.Value))
				}
				n = int64(binary.BigEndian.Uint64(old.Value))
			}
			c.Value = binary.BigEndian.AppendUint64(nil, uint64(n+r.IncrementAmount))
		case cell.Append:
			if ok && len(old.Value)+len(r.AppendValue) > cell.MaxValueLen {
				return nil, cell.Invalidf("appending to %s:%q of row %q would make a value of %d bytes; the limit is %d", r.Family, r.Qualifier, row, len(old.Value)+len(r.AppendValue), cell.MaxValueLen)
			}
			c.Value = append(bytes.Clone(old.Value), r.AppendValue...)
			if c.Value == nil {
				c.Value = []byte{}
			}
		}
		results[k] = c
	}
	out := make([]cell.Cell, 0, len(results))
	muts := make([]cell.Mutation, 0, len(results))
	for _, c := range results {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return cell.Compare(&out[i], &out[j]) < 0 })
	for _, c := range out {
		muts = append(muts, cell.Mutation{Kind: cell.SetCell, Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
	}
	if err := t.commit(ctx, sch, row, muts); err != nil {
		return nil, err
	}
	return out, nil
}
