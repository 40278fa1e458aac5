package vfs

import "errors"

// ErrSlowDown marks an error of a store that refused a call because it is
// overloaded (S3's 503 SlowDown and its relatives): the caller should wait
// longer before it tries again, with jitter, rather than retry at its
// usual pace and add to the load. Test with errors.Is.
var ErrSlowDown = errors.New("vfs: the store asks to slow down")
