//go:build !race

package tablet

// raceEnabled: see race_on_test.go.
const raceEnabled = false
