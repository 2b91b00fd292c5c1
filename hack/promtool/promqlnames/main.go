// Command promqlnames reads a JSON list of PromQL expressions on stdin and
// writes, for each, the metric names it selects (a JSON list of lists, in
// order), parsed with Prometheus's own parser. test/monitoring runs it to
// check that every query of nudge's dashboard and alerts names a metric
// nudge serves. It exits 1 when an expression does not parse, or selects
// series by no metric name.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "promqlnames:", err)
		os.Exit(1)
	}
}

func run() error {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		return fmt.Errorf("reading the expressions: %w", err)
	}
	p := parser.NewParser(parser.Options{})
	out := make([][]string, len(exprs))
	for i, e := range exprs {
		expr, err := p.ParseExpr(e)
		if err != nil {
			return fmt.Errorf("parsing %q: %w", e, err)
		}
		names := []string{}
		var missing error
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name == "" {
				missing = fmt.Errorf("%q selects series by no metric name: %s", e, vs)
			}
			names = append(names, name)
			return nil
		})
		if missing != nil {
			return missing
		}
		slices.Sort(names)
		out[i] = slices.Compact(names)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
