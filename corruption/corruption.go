package corruption

import "errors"

// ErrCorrupt marks every error caused by damaged stored data. Check it
// with errors.Is; the package sentinels made with New all wrap it.
var ErrCorrupt = errors.New("corruption: corrupt data")

// New returns a package's corruption sentinel: an error whose message is
// msg alone and which wraps ErrCorrupt. Each call returns a distinct
// error, so errors.Is tells the packages' sentinels apart while
// errors.Is(err, ErrCorrupt) matches them all.
func New(msg string) error { return &sentinel{msg: msg} }

// sentinel is a package's corruption marker.
type sentinel struct{ msg string }

func (e *sentinel) Error() string { return e.msg }

func (e *sentinel) Unwrap() error { return ErrCorrupt }
