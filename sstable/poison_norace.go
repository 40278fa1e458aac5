//go:build !race

package sstable

// poisonReleased is off outside race builds: see poison_race.go.
const poisonReleased = false
