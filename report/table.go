package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/report/theme"
)

func fmtF(v *float64, prec int) (text, key string) {
	if v == nil || math.IsNaN(*v) {
		return "—", ""
	}
	return strconv.FormatFloat(*v, 'f', prec, 64), strconv.FormatFloat(*v, 'g', -1, 64)
}

func kpis(r *Run, keys []string) []KPI {
	if r.Summary == nil {
		return nil
	}
	s := r.Summary
	t := func(v *float64, p int) string { x, _ := fmtF(v, p); return x }
	out := []KPI{{"best test AUC", t(s.TestAUCBest, 4)}, {"final test loss", t(s.TestLossFinal, 4)},
		{"steps", strconv.FormatInt(s.Steps, 10)}}
	if s.TestAUCSelected != nil {
		// The run's result comes first; the test curve's top is chosen by
		// looking at the test split.
		out[0] = KPI{"test curve top", t(s.TestAUCBest, 4)}
		out = append([]KPI{{"test AUC (selected on validation)", t(s.TestAUCSelected, 4)}}, out...)
	}
	for _, k := range keys {
		if _, l := splitKey(k); l != "cut" {
			continue
		}
		if st, ok := s.Leak[k]; ok {
			v := t(st.Q95Abs, 3)
			if c, key := fmtF(st.ChanceQ95Abs, 3); key != "" {
				v += " (chance " + c + ")"
			}
			out = append(out, KPI{"q95 |AUC−½| " + k, v})
		}
		if len(out) >= 7 {
			break
		}
	}
	return out
}

func rawNum(raw map[string]any, key string) *float64 {
	if v, ok := raw[key].(float64); ok {
		return &v
	}
	return nil
}

func table(set *Set, keys []string) Table {
	var t Table
	head := []string{"run", "dataset", "method", "param", "seed", "status", "best test AUC", "final test AUC",
		"final test loss", "final ACE", "steps", "seconds", "protect ms"}
	for _, h := range head {
		c := Cell{Text: h}
		if h == "run" || h == "dataset" || h == "method" || h == "param" || h == "status" {
			c.Class = "txt"
		}
		t.Head = append(t.Head, c)
	}
	for _, k := range keys {
		t.Head = append(t.Head, Cell{Text: k + " q95|·−½|"}, Cell{Text: k + " chance"}, Cell{Text: k + " q95"})
	}
	for _, r := range set.Runs {
		st := r.Setting
		status := r.Status
		cls := "txt"
		if strings.HasPrefix(status, "failed") {
			cls = "txt failed"
		}
		row := []Cell{
			{Text: r.Name, Sort: r.Name, Class: "txt"},
			{Text: st.Dataset, Sort: st.Dataset, Class: "txt"},
			{Text: st.Method, Sort: st.Method, Class: "txt", Color: theme.Hex(methodColor(st.Method))},
			{Text: st.Param, Sort: strconv.FormatFloat(st.Value, 'g', -1, 64), Class: "txt"},
			{Text: strconv.FormatUint(r.Seed(), 10), Sort: strconv.FormatUint(r.Seed(), 10)},
			{Text: status, Sort: status, Class: cls},
		}
		num := func(v *float64, p int) Cell { x, k := fmtF(v, p); return Cell{Text: x, Sort: k} }
		s := r.Summary
		if s == nil {
			s = &Summary{}
		}
		var steps *float64
		if r.Summary != nil {
			v := float64(s.Steps)
			steps = &v
		}
		row = append(row, num(s.TestAUCBest, 4), num(s.TestAUCFinal, 4), num(s.TestLossFinal, 4), num(s.ACEFinal, 4),
			num(steps, 0), num(s.Seconds, 1), num(rawNum(s.Raw, "protect_ms_mean"), 3))
		for _, k := range keys {
			l := s.Leak[k]
			row = append(row, num(l.Q95Abs, 4), num(l.ChanceQ95Abs, 4), num(l.Q95, 4))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
