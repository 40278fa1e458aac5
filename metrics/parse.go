package metrics

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed scrape: metric families by name.
type Families map[string]*dto.MetricFamily

// Parse reads the Prometheus text format (what /metrics serves without
// content negotiation), for tests and tools that check a scrape.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: parsing the exposition: %w", err)
	}
	return fs, nil
}

// Has reports whether family name has a series whose labels include
// every pair of match.
func (f Families) Has(name string, match map[string]string) bool {
	for _, m := range f[name].GetMetric() {
		if labelsMatch(m, match) {
			return true
		}
	}
	return false
}

func labelsMatch(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Sum returns the sum of the values of family name over the series whose
// labels include every pair of match (a counter's or gauge's value; a
// histogram's count), and whether the family exists.
func (f Families) Sum(name string, match map[string]string) (float64, bool) {
	mf, ok := f[name]
	if !ok {
		return 0, false
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, true
}

// Tabula returns the names of the families that are Tabula's own
// (prefix tabula_), leaving out the Go runtime and process ones.
func (f Families) Tabula() []string {
	var out []string
	for name := range f {
		if strings.HasPrefix(name, Namespace+"_") {
			out = append(out, name)
		}
	}
	return out
}

// documentedRow is a row of the metrics tables of docs/OPERATIONS.md:
// | `tabula_...` | type | labels | meaning |
var documentedRow = regexp.MustCompile("^\\|\\s*`(tabula_[a-z0-9_]+)`\\s*\\|\\s*(counter|gauge|histogram)\\s*\\|")

// Documented returns the series documented in the "Metrics" section of
// docs/OPERATIONS.md (its table rows), by name, with their types, so that
// tests can hold the documentation and the code to each other.
func Documented(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == "Metrics"
			continue
		}
		if !in {
			continue
		}
		if m := documentedRow.FindStringSubmatch(line); m != nil {
			out[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("metrics: no \"## Metrics\" section with metric rows found")
	}
	return out, nil
}

// TypeName returns the documented type name of a family: counter, gauge
// or histogram.
func TypeName(mf *dto.MetricFamily) string {
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM:
		return "histogram"
	}
	return strings.ToLower(mf.GetType().String())
}

// Gather collects g into Families.
func Gather(g prometheus.Gatherer) (Families, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := Families{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out, nil
}
