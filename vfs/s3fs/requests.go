package s3fs

import (
	"net/http"
	"sync/atomic"
)

// Requests counts the HTTP requests an FS sent to the store, by kind. A
// store bills, throttles and answers by request, so the number a tablet
// load or a thousand writes cost is what the object-store paths are
// measured by (docs/BENCHMARKS.md "Store requests per tablet load"); tests
// assert them, since a count is deterministic. Retries the client makes
// on its own count each time.
type Requests struct {
	List   int64 // GET of a bucket listing
	Get    int64 // GET of an object
	Head   int64 // HEAD of an object or bucket
	Put    int64 // PUT of an object (a part, a directory marker)
	Copy   int64 // PUT with a copy source: a server-side copy
	Delete int64 // DELETE of one object, or a POST of a multi-object delete
	Other  int64 // anything else
}

// Total is the number of requests of every kind.
func (r Requests) Total() int64 {
	return r.List + r.Get + r.Head + r.Put + r.Copy + r.Delete + r.Other
}

// Sub returns r minus an earlier snapshot o.
func (r Requests) Sub(o Requests) Requests {
	return Requests{
		List: r.List - o.List, Get: r.Get - o.Get, Head: r.Head - o.Head, Put: r.Put - o.Put,
		Copy: r.Copy - o.Copy, Delete: r.Delete - o.Delete, Other: r.Other - o.Other,
	}
}

// counters are the live counts behind Requests.
type counters struct {
	list, get, head, put, copy, delete, other atomic.Int64
}

func (c *counters) snapshot() Requests {
	return Requests{
		List: c.list.Load(), Get: c.get.Load(), Head: c.head.Load(), Put: c.put.Load(),
		Copy: c.copy.Load(), Delete: c.delete.Load(), Other: c.other.Load(),
	}
}

// countingTransport counts each request it sends by kind.
type countingTransport struct {
	next http.RoundTripper
	c    *counters
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.count(req)
	return t.next.RoundTrip(req)
}

func (c *counters) count(req *http.Request) {
	q := req.URL.Query()
	switch req.Method {
	case http.MethodGet:
		// A listing is a GET of the bucket (path-style: /<bucket>/ with
		// no object; virtual-host style: /) with list parameters.
		if q.Has("list-type") || q.Has("prefix") || q.Has("delimiter") {
			c.list.Add(1)
		} else {
			c.get.Add(1)
		}
	case http.MethodHead:
		c.head.Add(1)
	case http.MethodPut:
		if req.Header.Get("X-Amz-Copy-Source") != "" {
			c.copy.Add(1)
		} else {
			c.put.Add(1)
		}
	case http.MethodDelete:
		c.delete.Add(1)
	case http.MethodPost:
		if q.Has("delete") {
			c.delete.Add(1)
		} else {
			c.other.Add(1)
		}
	default:
		c.other.Add(1)
	}
}

// Requests returns the requests f sent so far, by kind.
func (f *FS) Requests() Requests { return f.counts.snapshot() }
