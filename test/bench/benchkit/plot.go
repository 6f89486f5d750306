package benchkit

import (
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotCDF writes the cumulative distribution of ds (in milliseconds) to
// a PNG file: the share of values at or below each latency.
func PlotCDF(file, title string, ds []time.Duration) error {
	sorted := make([]time.Duration, len(ds))
	copy(sorted, ds)
	Quantile(sorted, 0) // sorts
	pts := make(plotter.XYs, len(sorted))
	for i, d := range sorted {
		pts[i].X = float64(d) / float64(time.Millisecond)
		pts[i].Y = float64(i+1) / float64(len(sorted))
	}
	return plotLine(file, title, "latency (ms)", "share of pods", pts)
}

// PlotSeries writes y over x to a PNG file.
func PlotSeries(file, title, xLabel, yLabel string, xs, ys []float64) error {
	pts := make(plotter.XYs, len(xs))
	for i := range xs {
		pts[i].X, pts[i].Y = xs[i], ys[i]
	}
	return plotLine(file, title, xLabel, yLabel, pts)
}

func plotLine(file, title, xLabel, yLabel string, pts plotter.XYs) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	p.Add(line)
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, file)
}
