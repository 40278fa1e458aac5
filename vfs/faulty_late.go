package vfs

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// AfterApply, returned by an Injector, lets the call be carried out on the
// inner FS and then fails it with Err (ErrInjected when nil): the answer
// of a call that happened was lost. A write so failed reports 0 bytes
// written although all of them were.
type AfterApply struct {
	Err error
}

func (a *AfterApply) Error() string {
	if a.Err == nil {
		return ErrInjected.Error() + ": the call was carried out, its answer lost"
	}
	return fmt.Sprintf("%v (the call was carried out)", a.Err)
}

func (a *AfterApply) Unwrap() []error { return nonNil(ErrInjected, a.Err) }

// Late, returned by an Injector, fails the call at once, as a caller's
// deadline that passed while the call was on its way, and holds the call
// back: Release carries it out. The error wraps ErrInjected,
// context.DeadlineExceeded and Err (when set). One Late may hold many
// calls (return it for each); Release carries them out in the order they
// were made. A Late never released is a call that never lands.
//
// Make it with &vfs.Late{}; it is safe for concurrent use.
type Late struct {
	Err error

	// mu protects held.
	mu   sync.Mutex
	held []heldCall
}

type heldCall struct {
	op    Op
	name  string
	apply func() error
}

func (l *Late) Error() string {
	s := ErrInjected.Error() + ": " + context.DeadlineExceeded.Error() + "; the call may still land"
	if l.Err != nil {
		s += ": " + l.Err.Error()
	}
	return s
}

func (l *Late) Unwrap() []error {
	return nonNil(ErrInjected, context.DeadlineExceeded, l.Err)
}

// nonNil returns errs without the nil ones.
func nonNil(errs ...error) []error {
	out := errs[:0]
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

func (l *Late) hold(op Op, name string, apply func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = append(l.held, heldCall{op: op, name: name, apply: apply})
}

// Held returns how many calls wait for Release.
func (l *Late) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// Release carries out the calls held so far, in order, and returns their
// errors (a rename whose source is gone by now fails, as a late copy of a
// deleted object would).
func (l *Late) Release() error {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	var errs []error
	for _, c := range held {
		if err := c.apply(); err != nil {
			errs = append(errs, fmt.Errorf("vfs: late %s of %s: %w", c.op, c.name, err))
		}
	}
	return errors.Join(errs...)
}
