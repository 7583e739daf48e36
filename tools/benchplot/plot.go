package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stitchllm/stitch/bench"
)

// modeColors keeps each mode's color the same in every plot.
var modeColors = map[string]color.Color{
	string(bench.ModeFull):      color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	string(bench.ModeCanonical): color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	string(bench.ModeExact):     color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"target":                    color.Gray{Y: 0x60},
}

// writePlots draws dir/prep.png (preparation wall time against context length per mode, log-log:
// each point is a timed turn's median), dir/prep_cpu.png (the same in thread CPU time, when
// measured) and dir/hit_ratio.png (prefix-cache hit ratio per mode).
func writePlots(r *bench.Result, dir string) error {
	wall := func(t bench.PrepTiming) []float64 { return t.MS }
	if err := prepPlot(r, filepath.Join(dir, "prep.png"), "wall time", wall); err != nil {
		return err
	}
	cpu := func(t bench.PrepTiming) []float64 { return t.CPUMS }
	if err := prepPlot(r, filepath.Join(dir, "prep_cpu.png"), "thread CPU time", cpu); err != nil {
		return err
	}
	return hitPlot(r, filepath.Join(dir, "hit_ratio.png"))
}

func prepPlot(r *bench.Result, path, what string, values func(bench.PrepTiming) []float64) error {
	p := plot.New()
	p.Title.Text = "Continuation preparation " + what + " vs context length"
	p.X.Label.Text = "prompt tokens"
	p.Y.Label.Text = "ms (median of repetitions)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}}
	drawn := 0
	for i, m := range r.Modes {
		var pts plotter.XYs
		for _, s := range m.PrepSamples {
			v := values(s)
			if s.Tokens <= 0 || len(v) == 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(s.Tokens), Y: max(median(v), 0.001)})
		}
		if len(pts) == 0 {
			continue
		}
		line, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", m.Mode, err)
		}
		c := modeColors[m.Mode]
		line.Color, sc.Color = c, c
		line.Width = vg.Points(1)
		sc.Shape = shapes[i%len(shapes)]
		sc.Radius = vg.Points(2.5)
		p.Add(line, sc)
		p.Legend.Add(m.Mode, line, sc)
		drawn++
	}
	if drawn == 0 {
		return nil // nothing timed (a --target run, or no CPU clock)
	}
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

func hitPlot(r *bench.Result, path string) error {
	p := plot.New()
	p.Title.Text = "Prefix-cache hit ratio (simulator, tokens)"
	p.Y.Label.Text = "hits / queries"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	names := make([]string, len(r.Modes))
	w := vg.Points(40)
	for i, m := range r.Modes {
		names[i] = fmt.Sprintf("%s\n%.4f", m.Mode, m.HitRatio)
		vals := make(plotter.Values, len(r.Modes))
		vals[i] = m.HitRatio
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("plot hit ratio: %w", err)
		}
		bars.Color = modeColors[m.Mode]
		bars.LineStyle.Width = 0
		p.Add(bars)
	}
	p.NominalX(names...)
	if err := p.Save(5*vg.Inch, 3.5*vg.Inch, path); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// median is the nearest-rank 50th percentile, the statistic bench's table reports for these
// samples (bench's unexported percentile), so a plotted point equals the table's p50.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)+1)/2-1]
}
