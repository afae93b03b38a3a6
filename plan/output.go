package plan

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/report"
)

// Output files of a plan's directory.
const (
	// RecommendedFile is the recommended configuration, for train,
	// active, passive and sweep (--config).
	RecommendedFile = "recommended.yaml"
	// FrontierSVG and FrontierPNG are the frontier figure.
	FrontierSVG = "frontier.svg"
	FrontierPNG = "frontier.png"
)

// LeakLabel names the leak statistic in the figure and the messages.
const LeakLabel = "strongest attack's q95 |leak AUC − ½| (training batches, every layer)"

// writeOutputs writes the figure and, with a recommendation,
// recommended.yaml; without one it removes a recommended.yaml an earlier
// invocation left.
func (o *Options) writeOutputs(res *Result) error {
	pts := make([]report.FrontierPoint, len(res.Rows))
	for i, r := range res.Rows {
		pts[i] = report.FrontierPoint{Method: r.Setting.Legend().Method, Leak: r.StrongestLeak, ValAUC: r.ValAUC}
	}
	png, svg, err := report.FrontierFigure(pts, o.Threat.MaxLeak, res.Recommended, LeakLabel)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, FrontierSVG), svg, 0o644); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, FrontierPNG), png, 0o644); err != nil {
		return err
	}
	path := filepath.Join(o.Out, RecommendedFile)
	if res.Recommended < 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	r := res.Rows[res.Recommended]
	c := o.recommendedConfig(r.Setting, res.Attacks)
	y, err := config.Marshal(&c)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("# recommended by splitguard plan (%s): %s\n# validation AUC %.4f (cost %.4f against no defence), strongest attack %s at %.4f ≤ %g\n",
		o.Out, r.Legend, r.ValAUC, r.Cost, r.Strongest, r.StrongestLeak, o.Threat.MaxLeak)
	if err := atomicfile.WriteFile(path, append([]byte(head), y...), 0o644); err != nil {
		return err
	}
	res.Recommendation = path
	return nil
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}
