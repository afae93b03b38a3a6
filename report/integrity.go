package report

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/metrics"
)

// cheatLabel names what a run's passive party does (docs/methods/integrity.md):
// its backdoor, free-riding mode or optimiser, "honest" for none. A
// backdoor's dry run is an honest party: honest reports false for it only
// through dry.
func cheatLabel(cfg map[string]any) (label string, honest, dry bool) {
	var parts []string
	if b := str(cfg, "backdoor"); b != "" {
		if str(cfg, "backdoor_dry_run") == "true" {
			return b + " (dry run)", true, true
		}
		parts = append(parts, b)
	}
	if f := str(cfg, "free_ride"); f != "" {
		parts = append(parts, "free_ride "+f)
	}
	if o := str(cfg, "passive_optimizer"); o != "" {
		parts = append(parts, "optimizer "+o)
	}
	if h := str(cfg, "hijack"); h != "" {
		parts = append(parts, "active "+h)
	}
	if len(parts) == 0 {
		return "honest", true, false
	}
	return strings.Join(parts, " + "), false, false
}

// cheatKeys are the configuration keys of what a passive (or active)
// party does beyond the protocol: [cheatLabel] reads them.
var cheatKeys = []string{"backdoor", "backdoor_dry_run", "free_ride", "passive_optimizer", "hijack"}

// protectionLabel is the run's protection setting without what its
// parties do ([SettingOf] of the configuration less [cheatKeys]), so that
// a cheating run is compared with the honest runs of its protection.
func protectionLabel(cfg map[string]any) string {
	c := maps.Clone(cfg)
	for _, k := range cheatKeys {
		delete(c, k)
	}
	return SettingOf(c).Label()
}

// alarmStep reads the detector and the step from an integrity alarm
// ("integrity: NAME scored X at step N, …").
var alarmStep = regexp.MustCompile(`^integrity: (\S+) scored \S+ at step (\d+)`)

// cheatCell is one (dataset, setting, party behaviour) of the cheating
// matrix: its runs.
type cheatCell struct {
	dataset, setting, label string
	honest, dry             bool
	runs                    []*Run
}

// cheatCells groups the runs with a summary by dataset, protection
// setting and what the passive party does, sorted; nil when no run
// cheats and none is a backdoor's dry run.
func cheatCells(runs []*Run) []*cheatCell {
	cells := map[string]*cheatCell{}
	cheating := false
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		label, honest, dry := cheatLabel(r.Config)
		cheating = cheating || !honest || dry
		setting := protectionLabel(r.Config)
		k := r.Setting.Dataset + "\x00" + setting + "\x00" + label
		c := cells[k]
		if c == nil {
			c = &cheatCell{dataset: r.Setting.Dataset, setting: setting, label: label, honest: honest, dry: dry}
			cells[k] = c
		}
		c.runs = append(c.runs, r)
	}
	if !cheating {
		return nil
	}
	out := slices.Collect(maps.Values(cells))
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.dataset != b.dataset {
			return a.dataset < b.dataset
		}
		if a.setting != b.setting {
			return a.setting < b.setting
		}
		if a.honest != b.honest {
			return a.honest // honest and dry runs first
		}
		return a.label < b.label
	})
	return out
}

// rawMap is summary.json's object key as a map (nil if absent).
func rawMap(s *Summary, key string) map[string]any {
	m, _ := s.Raw[key].(map[string]any)
	return m
}

// meanOf is the mean of f over the runs where it is defined, and how
// many those are.
func meanOf(runs []*Run, f func(*Summary) (float64, bool)) (float64, int) {
	s, n := 0.0, 0
	for _, r := range runs {
		if v, ok := f(r.Summary); ok {
			s += v
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return s / float64(n), n
}

// fmtMean formats a mean over n runs ("—" for none).
func fmtMean(v float64, n, prec int) Cell {
	if n == 0 {
		return Cell{Text: "—"}
	}
	return Cell{Text: strconv.FormatFloat(v, 'f', prec, 64), Sort: strconv.FormatFloat(v, 'g', -1, 64)}
}

// integritySection is the cheating matrix: for each dataset, protection
// setting and passive behaviour, the runs' mean attack success rate and
// clean test AUC (summary.json backdoor), the dry run's rate beside the
// attack's, and the mean test AUC; then for each cheating behaviour and
// detector, the detection AUC of its runs against the honest runs (and
// dry runs) of the same dataset and setting by each run's largest score
// (summary.json integrity), and how many of its runs the detector
// stopped, with the median step. nil when no run cheats.
func (b *builder) integritySection() (*Section, error) {
	cells := cheatCells(b.set.Runs)
	if cells == nil {
		return nil, nil
	}
	asr := func(s *Summary) (float64, bool) {
		if bd := rawMap(s, "backdoor"); bd != nil {
			v, ok := bd["asr"].(float64)
			return v, ok
		}
		return 0, false
	}
	clean := func(s *Summary) (float64, bool) {
		if bd := rawMap(s, "backdoor"); bd != nil {
			v, ok := bd["clean_test_auc"].(float64)
			return v, ok
		}
		if v := s.MainAUC(); v != nil {
			return *v, true
		}
		return 0, false
	}
	var rows [][]Cell
	for _, c := range cells {
		a, na := meanOf(c.runs, asr)
		cl, ncl := meanOf(c.runs, clean)
		dry := Cell{Text: "—"}
		if !c.honest {
			for _, d := range cells {
				if d.dry && d.dataset == c.dataset && d.setting == c.setting && strings.HasPrefix(d.label, c.label+" ") {
					v, n := meanOf(d.runs, asr)
					dry = fmtMean(v, n, 3)
				}
			}
		}
		stopped, warned := 0, 0
		for _, r := range c.runs {
			if r.Summary.Raw["integrity_alarm"] != nil {
				stopped++
			}
			if len(alarmedDetectors(r.Summary)) > 0 {
				warned++
			}
		}
		rows = append(rows, []Cell{{Text: c.dataset, Sort: c.dataset, Class: "txt"}, {Text: c.setting, Sort: c.setting, Class: "txt"},
			{Text: c.label, Sort: c.label, Class: "txt"}, {Text: strconv.Itoa(len(c.runs)), Sort: strconv.Itoa(len(c.runs))},
			fmtMean(a, na, 3), dry, fmtMean(cl, ncl, 4), {Text: strconv.Itoa(stopped), Sort: strconv.Itoa(stopped)},
			{Text: strconv.Itoa(warned), Sort: strconv.Itoa(warned)}})
	}
	rows = append(rows, detectionRows(cells)...)
	return &Section{ID: "integrity", Title: "Cheating parties",
		Lead: "Runs whose passive party cheats (a backdoor, free-riding, a malicious optimiser) beside the honest runs of the same data and protection " +
			"(docs/methods/integrity.md). Outcome rows: the mean attack success rate (test rows not of the target class predicted as the target once " +
			"triggered), the same trigger on the honestly trained model (the backdoor's dry run), the clean test AUC, how many runs a detector stopped and how many raised an alarm (summary.json integrity_alarms: " +
			"a detector's score reached its alarm threshold, which warns without stopping). " +
			"Detector rows: the detection AUC of the cheating runs against the honest and dry runs by each run's largest score, the runs whose score " +
			"exceeds every honest run's, the median step at which the detector stopped a run, and the runs it stopped and alarmed in.",
		Table: &Table{Head: []Cell{{Text: "dataset", Class: "txt"}, {Text: "protection", Class: "txt"}, {Text: "passive party / detector", Class: "txt"},
			{Text: "runs"}, {Text: "attack success rate / detection AUC"}, {Text: "dry-run rate / runs above every honest"},
			{Text: "clean test AUC / median stop step"}, {Text: "stopped"}, {Text: "alarmed"}}, Rows: rows}}, nil
}

// detectionRows are the detector rows of [integritySection]: per cheating
// cell and detector scored in its runs, the detection AUC against the
// honest cell(s) of the same dataset and setting.
func detectionRows(cells []*cheatCell) [][]Cell {
	var rows [][]Cell
	for _, c := range cells {
		if c.honest {
			continue
		}
		var honest []*Run
		for _, h := range cells {
			if h.honest && h.dataset == c.dataset && h.setting == c.setting {
				honest = append(honest, h.runs...)
			}
		}
		dets := map[string]bool{}
		for _, r := range c.runs {
			for d := range rawMap(r.Summary, "integrity") {
				dets[d] = true
			}
		}
		for _, d := range slices.Sorted(maps.Keys(dets)) {
			rows = append(rows, detectionRow(c, d, honest))
		}
	}
	return rows
}

// detectionRow is detector d's row for cell c against the honest runs.
func detectionRow(c *cheatCell, d string, honest []*Run) []Cell {
	score := func(r *Run) (float64, bool) {
		v, ok := rawMap(r.Summary, "integrity")[d].(float64)
		return v, ok
	}
	var scores []float64
	var labels []uint8
	top, haveTop := 0.0, false
	for _, r := range honest {
		if v, ok := score(r); ok {
			scores, labels = append(scores, v), append(labels, 0)
			if !haveTop || v > top {
				top, haveTop = v, true
			}
		}
	}
	above, cheating, warned := 0, 0, 0
	var steps []int
	for _, r := range c.runs {
		if alarmedDetectors(r.Summary)[d] {
			warned++
		}
		if v, ok := score(r); ok {
			scores, labels = append(scores, v), append(labels, 1)
			cheating++
			if haveTop && v > top {
				above++
			}
		}
		if msg, ok := r.Summary.Raw["integrity_alarm"].(string); ok {
			if m := alarmStep.FindStringSubmatch(msg); m != nil && m[1] == d {
				if s, err := strconv.Atoi(m[2]); err == nil {
					steps = append(steps, s)
				}
			}
		}
	}
	aucCell, aboveCell := Cell{Text: "— (no honest run)"}, Cell{Text: "—"}
	if auc, ok := metrics.AUC(scores, labels, nil); ok {
		aucCell = fmtMean(auc, 1, 3)
		aboveCell = Cell{Text: fmt.Sprintf("%d of %d", above, cheating), Sort: strconv.Itoa(above)}
	}
	stepCell := Cell{Text: "—"}
	if len(steps) > 0 {
		slices.Sort(steps)
		m := steps[len(steps)/2]
		stepCell = Cell{Text: strconv.Itoa(m), Sort: strconv.Itoa(m)}
	}
	label := "  " + c.label + " ← " + d
	return []Cell{{Text: c.dataset, Sort: c.dataset, Class: "txt"}, {Text: c.setting, Sort: c.setting, Class: "txt"},
		{Text: label, Sort: label, Class: "txt"}, {Text: strconv.Itoa(len(c.runs)), Sort: strconv.Itoa(len(c.runs))},
		aucCell, aboveCell, stepCell, {Text: strconv.Itoa(len(steps)), Sort: strconv.Itoa(len(steps))},
		{Text: strconv.Itoa(warned), Sort: strconv.Itoa(warned)}}
}

// alarmedDetectors are the detectors named in a summary's integrity_alarms
// (the alarms that warned; empty when none did).
func alarmedDetectors(s *Summary) map[string]bool {
	out := map[string]bool{}
	list, _ := s.Raw["integrity_alarms"].([]any)
	for _, a := range list {
		if m, ok := a.(map[string]any); ok {
			if d, ok := m["detector"].(string); ok {
				out[d] = true
			}
		}
	}
	return out
}
