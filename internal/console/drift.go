package console

import "context"

// driftChart is a production study's drift over time: per (task, model), its metrics in
// consecutive windows, drawn as an SVG chart.
type driftChart struct{}

func (c *Console) driftChart(ctx context.Context, study string) (*driftChart, error) {
	return nil, nil
}
