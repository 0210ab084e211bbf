package fleetbench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// minTTFTms clamps samples for the logarithmic axis (which cannot show 0).
const minTTFTms = 0.1

// WritePlot draws the TTFT CDF of every cell to w (gonum.org/v1/plot), as SVG, or as PNG when
// png is set: one panel per workload, in report order, one line per policy and replica count
// (colour by policy, dashes by replica count), TTFT in ms on a logarithmic x axis, the
// fraction of successful requests on y. Cells without samples are left out.
func WritePlot(w io.Writer, cells []Cell, png bool) error {
	var workloads []string
	byWorkload := map[string][]Cell{}
	for _, c := range cells {
		if _, ok := byWorkload[c.Workload]; !ok {
			workloads = append(workloads, c.Workload)
		}
		byWorkload[c.Workload] = append(byWorkload[c.Workload], c)
	}
	if len(workloads) == 0 {
		return fmt.Errorf("fleetbench: no cells to plot")
	}
	policies, replicas := map[string]int{}, map[int]int{}
	rows := make([][]*plot.Plot, len(workloads))
	for i, wl := range workloads {
		p := plot.New()
		p.Title.Text = "TTFT CDF: " + wl
		p.X.Label.Text = "TTFT (ms, log scale)"
		p.Y.Label.Text = "fraction of requests"
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, msTicks{}
		p.Y.Min, p.Y.Max = 0, 1
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(-4)
		p.Add(plotter.NewGrid())
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range byWorkload[wl] {
			if len(c.TTFTSamples) == 0 {
				continue
			}
			xys := make(plotter.XYs, len(c.TTFTSamples))
			for k, v := range c.TTFTSamples {
				xys[k] = plotter.XY{X: max(v, minTTFTms), Y: float64(k+1) / float64(len(c.TTFTSamples))}
				lo, hi = min(lo, xys[k].X), max(hi, xys[k].X)
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("fleetbench: plot %s %s: %w", wl, c.Policy, err)
			}
			if _, ok := policies[c.Policy]; !ok {
				policies[c.Policy] = len(policies)
			}
			if _, ok := replicas[c.Replicas]; !ok {
				replicas[c.Replicas] = len(replicas)
			}
			l.Color = plotutil.Color(policies[c.Policy])
			l.Dashes = plotutil.Dashes(replicas[c.Replicas])
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s ×%d", c.Policy, c.Replicas), l)
		}
		if math.IsInf(lo, 1) {
			lo, hi = 1, 1000
		}
		p.X.Min, p.X.Max = lo*0.9, math.Max(hi*1.1, lo*2)
		rows[i] = []*plot.Plot{p}
	}
	width, height := vg.Points(640), vg.Points(360*float64(len(workloads)))
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if png {
		img = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	} else {
		img = vgsvg.New(width, height)
	}
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(workloads), Cols: 1, PadX: vg.Points(10), PadY: vg.Points(20),
		PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	_, err := img.WriteTo(w)
	return err
}

// WritePlotFile writes WritePlot's plot to path: PNG when path ends in ".png", else SVG.
func WritePlotFile(path string, cells []Cell) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WritePlot(f, cells, strings.EqualFold(filepath.Ext(path), ".png")); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// msTicks marks a logarithmic millisecond axis at every integer × 10^k, labelling 1, 2 and 5
// × 10^k (every mark when the range spans less than a decade, so it still has labels).
type msTicks struct{}

// Ticks returns the marks in [lo, hi] (lo > 0).
func (msTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for dec := math.Pow10(int(math.Floor(math.Log10(lo)))); dec <= hi; dec *= 10 {
		for i := 1; i < 10; i++ {
			v := float64(i) * dec
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || i == 2 || i == 5 || hi < 10*lo {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}
