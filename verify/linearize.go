package verify

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"

	"github.com/anishathalye/porcupine"
)

// Linearizability of the shared rows, checked with porcupine one row at
// a time. Each row's history is closed by the checker's final read of the
// row, placed after every other operation.
//
// An operation whose outcome is unknown may have taken effect at any time
// after its call, or never: it gets an infinite return time, so porcupine
// may place its effect anywhere after the call, including after the final
// read (which is the same as never). Such operations blow up the search
// (each open one doubles the candidates), so the checker first settles
// what the table tells: a counter whose final value equals its acked
// increments had no unknown increment applied, and an unknown CAS applied
// exactly when its token is among the chain's versions. Operations
// refused outright are dropped; they changed nothing and observed nothing.

// counterInput is an increment, or a read of the counter's value.
type counterInput struct{ read bool }

// counterOutput is the value an increment returned or a read saw; known
// is false for an increment whose outcome is unknown.
type counterOutput struct {
	value int64
	known bool
}

// counterModel is a register of an int64 that increments add one to.
var counterModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Hash: hashStep,
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(int64), input.(counterInput), output.(counterOutput)
		if in.read {
			return out.value == s, s
		}
		if !out.known {
			return true, s + 1
		}
		return out.value == s+1, s + 1
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(counterInput), output.(counterOutput)
		switch {
		case in.read:
			return fmt.Sprintf("read() -> %d", out.value)
		case !out.known:
			return "incr() -> ?"
		}
		return fmt.Sprintf("incr() -> %d", out.value)
	},
}

// casInput is a CAS from step from to step to, or a read of the step.
type casInput struct {
	read     bool
	from, to int64
}

// casOutput is whether a CAS was applied (false: its predicate did not
// match), or the step a read saw.
type casOutput struct {
	applied bool
	value   int64
}

// casModel is a register of a chain's step, moved by compare-and-set.
var casModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Hash: hashStep,
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(int64), input.(casInput), output.(casOutput)
		switch {
		case in.read:
			return out.value == s, s
		case out.applied:
			return s == in.from, in.to
		default:
			return s != in.from, s
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(casInput), output.(casOutput)
		switch {
		case in.read:
			return fmt.Sprintf("read() -> %d", out.value)
		case out.applied:
			return fmt.Sprintf("cas(%d→%d) applied", in.from, in.to)
		}
		return fmt.Sprintf("cas(%d→%d) no match", in.from, in.to)
	},
}

func hashStep(state any) uint64 { return uint64(state.(int64)) }

// porcupineOp turns a history op into porcupine's form; an op that never
// returned definitely gets an infinite return time.
func porcupineOp(op *Op, in, out any) porcupine.Operation {
	ret := op.Return
	if op.Ambiguous() || ret == 0 {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: op.Worker, Input: in, Call: op.Call, Output: out, Return: ret}
}

func (c *Checker) linearizeCounter(row string, sh *sharedHist, final, acked int64) {
	var ops []porcupine.Operation
	for _, op := range sh.ops {
		switch {
		case op.Outcome == Acked:
			ops = append(ops, porcupineOp(op, counterInput{}, counterOutput{value: op.Value, known: true}))
		case op.Ambiguous() && final > acked:
			// Some unknown increments were applied; which ones, only the
			// search can tell.
			ops = append(ops, porcupineOp(op, counterInput{}, counterOutput{}))
		}
	}
	ops = append(ops, c.finalRead(counterInput{read: true}, counterOutput{value: final, known: true}))
	c.linearize(row, counterModel, ops)
}

func (c *Checker) linearizeChain(row string, sh *sharedHist, final int64, inTable map[string]bool) {
	var ops []porcupine.Operation
	for _, op := range sh.ops {
		switch {
		case op.Kind == KindRead && op.Outcome == Acked:
			ops = append(ops, porcupineOp(op, casInput{read: true}, casOutput{value: op.Value}))
		case op.Kind != KindCAS:
		case op.Outcome == Acked:
			ops = append(ops, porcupineOp(op, casInput{from: op.From, to: op.To}, casOutput{applied: true}))
		case op.NoMatch:
			ops = append(ops, porcupineOp(op, casInput{from: op.From, to: op.To}, casOutput{}))
		case op.Ambiguous() && inTable[op.Token]:
			ops = append(ops, porcupineOp(op, casInput{from: op.From, to: op.To}, casOutput{applied: true}))
		}
	}
	ops = append(ops, c.finalRead(casInput{read: true}, casOutput{value: final}))
	c.linearize(row, casModel, ops)
}

// finalRead is the checker's read of a row, after everything else.
func (c *Checker) finalRead(in, out any) porcupine.Operation {
	return porcupine.Operation{ClientId: -1, Input: in, Call: c.horizon, Output: out, Return: c.horizon + 1}
}

func (c *Checker) linearize(row string, model porcupine.Model, ops []porcupine.Operation) {
	switch porcupine.CheckOperationsTimeout(model, ops, c.o.LinearizabilityTimeout) {
	case porcupine.Ok:
		c.rep.LinearizableRows++
		return
	case porcupine.Unknown:
		c.rep.Inconclusive = append(c.rep.Inconclusive, row)
		return
	}
	where := ""
	if c.o.VisualizeDir != "" {
		if path, err := c.visualize(row, model, ops); err == nil {
			where = "; visualization in " + path
		} else {
			where = fmt.Sprintf("; no visualization: %v", err)
		}
	}
	c.rep.violate(VLinearizability, "row %q: its %d operations are not linearizable%s", row, len(ops), where)
}

// visualize writes porcupine's HTML view of a row's history.
func (c *Checker) visualize(row string, model porcupine.Model, ops []porcupine.Operation) (string, error) {
	final := maxClient(ops) + 1
	for i := range ops {
		if ops[i].ClientId < 0 {
			ops[i].ClientId = final
		}
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, c.o.LinearizabilityTimeout)
	if err := os.MkdirAll(c.o.VisualizeDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(c.o.VisualizeDir, unsafeChars.ReplaceAllString(row, "_")+".html")
	return path, porcupine.VisualizePath(model, info, path)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func maxClient(ops []porcupine.Operation) int {
	m := 0
	for _, o := range ops {
		m = max(m, o.ClientId)
	}
	return m
}
