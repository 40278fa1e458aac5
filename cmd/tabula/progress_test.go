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
