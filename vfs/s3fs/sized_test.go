package s3fs

import (
	"bytes"
	"context"
	"testing"
)

// TestOpenSizedReadsWithoutListing: a file written in one part, opened by
// its size, reads with one GET a read and no LIST; opened with any other
// size, or written in two parts, its first read fails (the answer's
// Content-Range names the object's real length), so a caller never reads
// a wrong file silently and opens it again with Open.
func TestOpenSizedReadsWithoutListing(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "sized"))
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 1000)
	write := func(name string, pieces ...[]byte) {
		t.Helper()
		w, err := f.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pieces {
			if _, err := w.Write(p); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("/storage/one", data)
	write("/storage/two", data[:4000], data[4000:])
	n := int64(len(data))

	before := f.Requests()
	r, err := f.OpenSized("/storage/one", n)
	if err != nil {
		t.Fatal(err)
	}
	tail := make([]byte, 100)
	if _, err := r.ReadAt(tail, n-100); err != nil || !bytes.Equal(tail, data[n-100:]) {
		t.Fatalf("ReadAt of the tail = %q, %v", tail, err)
	}
	head := make([]byte, 100)
	if _, err := r.ReadAt(head, 0); err != nil || !bytes.Equal(head, data[:100]) {
		t.Fatalf("ReadAt of the head = %q, %v", head, err)
	}
	if got, want := f.Requests().Sub(before), (Requests{Get: 2}); got != want {
		t.Fatalf("opening by size and two reads made %+v requests, want %+v", got, want)
	}

	for _, c := range []struct {
		name string
		size int64
	}{
		{"/storage/one", n - 1}, // shorter than the object
		{"/storage/one", n + 1}, // longer
		{"/storage/two", n},     // the file's size, but part 0 is 4000 bytes
		{"/storage/gone", n},    // no such file
	} {
		r, err := f.OpenSized(c.name, c.size)
		if err != nil {
			continue // refused at once is fine too
		}
		for _, off := range []int64{0, c.size - 10} {
			if _, err := r.ReadAt(make([]byte, 10), off); err == nil {
				t.Errorf("%s opened with %d bytes: ReadAt(10 bytes at %d) succeeded, want an error", c.name, c.size, off)
			}
		}
	}
}
