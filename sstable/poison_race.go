//go:build race

package sstable

// poisonReleased: in race builds (every test run of `make test`) a block
// whose last holder lets go is overwritten before it is recycled, so that
// a value used after its block was released reads garbage and fails the
// tests that compare reads with a model (see blockbuf.go).
const poisonReleased = true
