package main

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/export"
)

// keyProgress places a key by the samples at or below it, within the
// range's share of the table; the table's end comes as an empty key.
func TestKeyProgress(t *testing.T) {
	samples := []client.KeySample{{Key: []byte("b"), OffsetBytes: 100}, {Key: []byte("d"), OffsetBytes: 200}, {Key: []byte("f"), OffsetBytes: 300}, {Key: nil, OffsetBytes: 400}}
	at := keyProgress(samples, nil, nil)
	for key, want := range map[string]float64{"a": 0, "b": 0.25, "c": 0.25, "d": 0.5, "e": 0.5, "z": 0.75} {
		if got := at([]byte(key)); math.Abs(got-want) > 1e-9 {
			t.Errorf("whole table, %q: %v, want %v", key, got, want)
		}
	}
	at = keyProgress(samples, []byte("b"), []byte("f")) // bytes 100..300
	for key, want := range map[string]float64{"b": 0, "d": 0.5, "e": 0.5} {
		if got := at([]byte(key)); math.Abs(got-want) > 1e-9 {
			t.Errorf("[b, f), %q: %v, want %v", key, got, want)
		}
	}
	if keyProgress(samples[:1], nil, nil) != nil || keyProgress(samples, []byte("x"), []byte("y")) != nil {
		t.Error("keyProgress estimates from samples that cannot tell")
	}
}

// A parallel export's ranges each count the bytes from their start to the
// last key they reported, or to their end once written whole; the whole
// export is done when every range is.
func TestRangesProgress(t *testing.T) {
	samples := []client.KeySample{{Key: []byte("b"), OffsetBytes: 100}, {Key: []byte("d"), OffsetBytes: 200}, {Key: []byte("f"), OffsetBytes: 300}, {Key: nil, OffsetBytes: 400}}
	p := &progress{}
	at := rangesProgress(p, samples, nil, nil)
	check := func(what string, want float64) {
		t.Helper()
		if got := p.done01(); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %v done, want %v", what, got, want)
		}
	}
	check("nothing reported", 0)
	at(nil, []byte("d"), []byte("b")) // range [, d) at b: bytes 0..100
	at([]byte("d"), nil, []byte("e")) // range [d, ) at e: bytes 200..200
	check("two ranges started", 0.25)
	at([]byte("d"), nil, []byte("f")) // now at f: 200..300
	check("one range further", 0.5)
	at(nil, []byte("d"), nil) // [, d) written whole: 0..200
	check("first range written", 0.75)
	at([]byte("d"), nil, nil) // [d, ) written whole: 200..400
	check("every range written", 1)
	if rangesProgress(&progress{}, samples[:1], nil, nil) != nil {
		t.Error("rangesProgress estimates from samples that cannot tell")
	}
}

// An import of local files measures how far it is by the bytes read.
func TestMeasureSourcesCountsTheFilesRead(t *testing.T) {
	dir := t.TempDir()
	var srcs []export.Source
	for _, n := range []string{"a", "b"} {
		path := filepath.Join(dir, n)
		if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, export.FileSource(path))
	}
	p := &progress{}
	srcs = measureSources(p, srcs)
	if got := p.done01(); got != 0 {
		t.Fatalf("before reading: %v done", got)
	}
	r, err := srcs[0].Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := p.done01(); got != 0.5 {
		t.Errorf("after one of two files: %v done, want 0.5", got)
	}
	if eta := p.eta(); eta == "" {
		t.Error("no estimate of the time left half way")
	}
	// Standard input: no estimate.
	p2 := &progress{}
	measureSources(p2, []export.Source{{Name: "stdin", Open: srcs[0].Open}})
	if got := p2.done01(); got >= 0 {
		t.Errorf("stdin: %v done, want no estimate", got)
	}
}
