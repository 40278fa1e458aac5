//go:build !race

package sstable

// raceEnabled: see race_on_test.go.
const raceEnabled = false
