package verify

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

// listWriter writes linked lists, as HBase's IntegrationTestBigLinkedList
// and Accumulo's continuous ingest do: each new node is a random row that
// points to the writer's previous acknowledged node. Every cell carries
// an explicit timestamp, so the client retries the write after an
// ambiguous failure.
func (in *Ingest) listWriter(ctx context.Context, w int, rng *rand.Rand) {
	prev := ""
	for ctx.Err() == nil {
		row := listKey(rng.Uint64())
		m := client.NewMutation().
			Set(familyList, qualPrev, listTimestamp, []byte(prev)).
			Set(familyList, qualPayload, listTimestamp, payload(row, in.o.ValueSize))
		id := in.h.Call(Op{Kind: KindList, Worker: w, Row: row, Prev: prev})
		octx, cancel := in.opContext()
		err := in.tbl.Apply(octx, []byte(row), m)
		cancel()
		out := Classify(err, m.Idempotent())
		in.done(w, id, KindList, row, out, 0, false, err)
		if out == Acked {
			prev = row
		} else if !pause(ctx) {
			return
		}
	}
}

// counterWriter increments a random counter row of the current
// generation by one and records the new value it returns.
func (in *Ingest) counterWriter(ctx context.Context, w int, rng *rand.Rand) {
	rule := client.NewReadModifyWrite().Increment(familyCounter, qualCount, 1)
	for ctx.Err() == nil {
		gen := in.counterRows.current()
		row := counterRow(in.h.Tag(), gen, rng.IntN(in.o.Counters))
		id := in.h.Call(Op{Kind: KindIncr, Worker: w, Row: row})
		octx, cancel := in.opContext()
		r, err := in.tbl.ReadModifyWrite(octx, []byte(row), rule)
		cancel()
		var value int64
		if err == nil {
			value, err = newCount(r)
		}
		out := Classify(err, false)
		in.done(w, id, KindIncr, row, out, value, false, err)
		if out == Unknown {
			in.counterRows.unknownIn(gen)
		}
		if out != Acked && !pause(ctx) {
			return
		}
	}
}

// newCount finds the counter's new value in a ReadModifyWrite answer. A
// malformed answer is a (non-retryable, outcome-unknown) error.
func newCount(r client.Row) (int64, error) {
	for _, c := range r.Cells {
		if c.Family == familyCounter && string(c.Qualifier) == string(qualCount) {
			return decodeCount(c.Value)
		}
	}
	return 0, fmt.Errorf("verify: read-modify-write answered %d cells, none %s:%s", len(r.Cells), familyCounter, qualCount)
}

// chainWriter moves a random chain row of the current generation one step
// on: CheckAndMutate writes step i+1 only if the newest step is i. The
// writer keeps a guess of each row's step; after a refusal or an
// ambiguous answer it reads the row (a recorded read) to learn it.
func (in *Ingest) chainWriter(ctx context.Context, w int, rng *rand.Rand) {
	guess := map[string]int64{}
	seq := 0
	for ctx.Err() == nil {
		row := chainRow(in.h.Tag(), in.chainRows.current(), rng.IntN(in.o.Chains))
		from := guess[row]
		seq++
		tok := fmt.Sprintf("%s.%d.%d", in.h.Tag(), w, seq)
		id := in.h.Call(Op{Kind: KindCAS, Worker: w, Row: row, From: from, To: from + 1, Token: tok})
		applied, err := in.cas(row, from, tok)
		out := Classify(err, false)
		noMatch := err == nil && !applied
		if noMatch {
			out = Failed
		}
		in.done(w, id, KindCAS, row, out, 0, noMatch, err)
		if out == Acked {
			guess[row] = from + 1
			continue
		}
		if out == Unknown && !pause(ctx) {
			return
		}
		if step, ok := in.readStep(w, row); ok {
			guess[row] = step
		}
	}
}

// cas writes step from+1 to row if its newest step is from (or, for step
// 0, if it has none). It reports whether it wrote.
func (in *Ingest) cas(row string, from int64, tok string) (bool, error) {
	set := client.NewMutation().Set(familyChain, qualStep, client.ServerTime, encodeStep(from+1, tok))
	octx, cancel := in.opContext()
	defer cancel()
	newest := rowfilter.Chain(rowfilter.Family(familyChain), rowfilter.CellsPerColumnLimit(1))
	if from == 0 {
		matched, err := in.tbl.CheckAndMutate(octx, []byte(row), newest, nil, set)
		return !matched, err
	}
	pred := rowfilter.Chain(rowfilter.Family(familyChain), rowfilter.CellsPerColumnLimit(1),
		rowfilter.ValueRegex(stepPattern(from)))
	return in.tbl.CheckAndMutate(octx, []byte(row), pred, set, nil)
}

// readStep reads row's newest step, recording the read.
func (in *Ingest) readStep(w int, row string) (int64, bool) {
	id := in.h.Call(Op{Kind: KindRead, Worker: w, Row: row})
	octx, cancel := in.opContext()
	r, err := in.tbl.ReadRow(octx, []byte(row), client.WithFilter(
		rowfilter.Chain(rowfilter.Family(familyChain), rowfilter.CellsPerColumnLimit(1))))
	cancel()
	var step int64
	if err == nil && len(r.Cells) > 0 {
		step, _, err = decodeStep(r.Cells[0].Value)
	}
	out := Acked
	if err != nil {
		out = Unknown // a read changes nothing; the checker ignores it
	}
	in.done(w, id, KindRead, row, out, step, false, err)
	return step, err == nil
}
