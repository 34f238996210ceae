package prom

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Names returns the sorted names of the metric families c describes. For a
// *prometheus.Registry that is every family of its registered collectors,
// including vectors that have no series yet and so are missing from a
// scrape; a histogram is named without its _bucket, _sum and _count
// suffixes. Unchecked collectors (whose Describe sends nothing) are not
// seen. Tests use it to check that what alert rules and dashboards query
// exists.
func Names(c prometheus.Collector) ([]string, error) {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	var err error
	for d := range ch {
		name, e := descName(d)
		if e != nil && err == nil {
			err = e
		}
		seen[name] = e == nil
	}
	delete(seen, "")
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, err
}

// descString matches the start of (*prometheus.Desc).String, the only way
// client_golang shows a descriptor's name.
var descString = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*")`)

func descName(d *prometheus.Desc) (string, error) {
	m := descString.FindStringSubmatch(d.String())
	if m == nil {
		return "", fmt.Errorf("metric names: cannot read the name of %s", d)
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		return "", fmt.Errorf("metric names: %s: %w", d, err)
	}
	return name, nil
}
