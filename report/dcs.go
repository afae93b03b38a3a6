package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
)

// settingScore is one protection setting's row of the DCS ranking.
type settingScore struct {
	g *group
	// mp is the main-task performance (the kept model's test AUC,
	// Summary.MainAUC, mean over seeds);
	// ap maps each cut-layer leak key to the attack performance
	// 2·q95|AUC − ½|.
	mp      float64
	ap, dcs map[string]float64
	// tdcs is the mean DCS over the attacks, each at its tuned figure
	// where a tuned attacker ran ("ATTACK_tuned/cut"), else its default;
	// tdcsDefault the same over the default figures only.
	tdcs, tdcsDefault float64
	// strongKey is the leak key of the strongest attack against the
	// setting (the largest AP among every default and tuned figure),
	// strongAP its AP and sdcs the DCS against it, the ranking's key.
	strongKey      string
	strongAP, sdcs float64
	stepMS         float64
	eps            float64
	// fap maps each feature attack to its performance ([featureAP]);
	// tdcsFeat is the mean DCS over them (T-DCS of the feature attacks)
	// and cdcs VFLAIR's C-DCS, the mean of the two T-DCS (NaN unless
	// both are known).
	fap            map[string]float64
	tdcsFeat, cdcs float64
}

// dcsScores scores every setting of dataset against the ideal defence
// (AP* = 0, MP* = the mean test AUC (Summary.MainAUC) of the runs without protection)
// with VFLAIR's DCS at β = ½, per cut-layer attack (a tuned attacker's
// figure, "ATTACK_tuned/cut", is an attack of its own), their mean over
// the attacks at the tuned figure where there is one (T-DCS) and at the
// default ones, and the DCS against the strongest attack (the largest AP
// of them all); where feature attacks ran, their T-DCS and the C-DCS. It
// returns the settings best first — by the C-DCS when any setting of the
// dataset has feature figures, then by the DCS against the strongest
// attack, then by T-DCS (NaN last) — MP* and a note when MP* had to be
// taken from another setting.
func dcsScores(gs []*group, dataset string, cutKeys []string) ([]settingScore, float64, string) {
	var out []settingScore
	mpIdeal, note := math.NaN(), ""
	stepNone := math.NaN()
	bestMP := math.Inf(-1)
	var runs []*Run
	for _, g := range gs {
		if g.Setting.Dataset == dataset {
			runs = append(runs, g.Runs...)
		}
	}
	feats := summaryFeatureAttacks(runs)
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		mp, _ := stat(g.Runs, (*Summary).MainAUC)
		step, _ := stat(g.Runs, func(s *Summary) *float64 { return rawNum(s.Raw, "step_ms_mean") })
		eps, _ := stat(g.Runs, func(s *Summary) *float64 {
			p, _ := s.Raw["privacy"].(map[string]any)
			return privacyEps(p)
		})
		sc := settingScore{g: g, mp: mp, ap: map[string]float64{}, dcs: map[string]float64{}, stepMS: step, eps: eps, fap: map[string]float64{}}
		for _, a := range feats {
			if v, ok := stat(g.Runs, featureAP(a)); ok {
				sc.fap[a] = v
			}
		}
		for _, k := range cutKeys {
			if v, ok := stat(g.Runs, leakStat(k, true)); ok {
				sc.ap[k] = 2 * v
			}
		}
		if protect.IsReference(g.Setting.Method) {
			mpIdeal, stepNone = mp, step
		}
		if !math.IsNaN(mp) {
			bestMP = math.Max(bestMP, mp)
		}
		out = append(out, sc)
	}
	if math.IsNaN(mpIdeal) && !math.IsInf(bestMP, -1) {
		mpIdeal = bestMP
		note = fmt.Sprintf("%s: no run without protection; MP* is the highest test AUC among the settings (%.4f)", dataset, bestMP)
	}
	for i := range out {
		sc := &out[i]
		var used, dflt []float64
		sc.strongAP, sc.sdcs = math.NaN(), math.NaN()
		for _, k := range cutKeys {
			ap, ok := sc.ap[k]
			if !ok || math.IsNaN(sc.mp) {
				continue
			}
			d := metrics.DCS(ap, 0, sc.mp, mpIdeal, metrics.DCSBeta)
			sc.dcs[k] = d
			if !math.IsNaN(ap) && !(ap <= sc.strongAP) {
				sc.strongKey, sc.strongAP, sc.sdcs = k, ap, d
			}
			if _, tuned := tunedBase(k); tuned {
				used = append(used, d)
				continue
			}
			dflt = append(dflt, d)
			if _, ok := sc.ap[tunedKey(k)]; !ok {
				used = append(used, d)
			}
		}
		sc.tdcs, sc.tdcsDefault = metrics.MeanDCS(used), metrics.MeanDCS(dflt)
		sc.stepMS /= stepNone
		var fd []float64
		for _, a := range feats {
			if ap, ok := sc.fap[a]; ok && !math.IsNaN(sc.mp) {
				fd = append(fd, metrics.DCS(ap, 0, sc.mp, mpIdeal, metrics.DCSBeta))
			}
		}
		sc.tdcsFeat = metrics.MeanDCS(fd)
		sc.cdcs = metrics.MeanDCS([]float64{sc.tdcs, sc.tdcsFeat})
		if math.IsNaN(sc.tdcs) || math.IsNaN(sc.tdcsFeat) {
			sc.cdcs = math.NaN()
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(feats) > 0 {
			if c := nanLastDesc(out[i].cdcs, out[j].cdcs); c != 0 {
				return c < 0
			}
		}
		if c := nanLastDesc(out[i].sdcs, out[j].sdcs); c != 0 {
			return c < 0
		}
		return nanLastDesc(out[i].tdcs, out[j].tdcs) < 0
	})
	return out, mpIdeal, note
}

// dcsTable is the ranking of every dataset's protection settings by the DCS
// against the strongest attack, then T-DCS ([dcsScores]).
func dcsTable(gs []*group, cutKeys []string) (*Table, []string) {
	t := &Table{}
	type ranked struct {
		scores  []settingScore
		mpIdeal float64
	}
	var all []ranked
	var notes []string
	withFeatures := false
	for _, d := range datasets(gs) {
		scores, mpIdeal, note := dcsScores(gs, d, cutKeys)
		if note != "" {
			notes = append(notes, note)
		}
		for _, sc := range scores {
			withFeatures = withFeatures || len(sc.fap) > 0
		}
		all = append(all, ranked{scores, mpIdeal})
	}
	head := []string{"rank", "dataset", "method", "param", "runs"}
	if withFeatures {
		head = append(head, "C-DCS", "T-DCS, features")
	}
	for _, h := range append(head, "DCS vs strongest", "strongest attack", "T-DCS", "T-DCS, default attacks") {
		c := Cell{Text: h}
		if h == "dataset" || h == "method" || h == "param" || h == "strongest attack" {
			c.Class = "txt"
		}
		t.Head = append(t.Head, c)
	}
	for _, k := range cutKeys {
		t.Head = append(t.Head, Cell{Text: "DCS " + k})
	}
	for _, h := range []string{"test AUC, selected model (MP)", "test AUC cost (MP* − MP)", "step time ×" + protect.Reference(), "DP ε"} {
		t.Head = append(t.Head, Cell{Text: h})
	}
	num := func(v float64, prec int) Cell {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Cell{Text: "—"}
		}
		return Cell{Text: strconv.FormatFloat(v, 'f', prec, 64), Sort: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	for _, rk := range all {
		scores, mpIdeal := rk.scores, rk.mpIdeal
		for i, sc := range scores {
			st := sc.g.Setting
			row := []Cell{
				{Text: strconv.Itoa(i + 1), Sort: strconv.Itoa(i + 1)},
				{Text: st.Dataset, Sort: st.Dataset, Class: "txt"},
				{Text: st.Method, Sort: st.Method, Class: "txt", Color: theme.Hex(methodColor(st.Method))},
				{Text: st.Param, Sort: st.Param, Class: "txt"},
				{Text: strconv.Itoa(len(sc.g.Runs)), Sort: strconv.Itoa(len(sc.g.Runs))},
			}
			if withFeatures {
				row = append(row, num(sc.cdcs, 4), num(sc.tdcsFeat, 4))
			}
			row = append(row,
				num(sc.sdcs, 4),
				strongCell(sc),
				num(sc.tdcs, 4),
				num(sc.tdcsDefault, 4),
			)
			for _, k := range cutKeys {
				v, ok := sc.dcs[k]
				if !ok {
					v = math.NaN()
				}
				row = append(row, num(v, 4))
			}
			row = append(row, num(sc.mp, 4), num(mpIdeal-sc.mp, 4), num(sc.stepMS, 2), num(sc.eps, 3))
			t.Rows = append(t.Rows, row)
		}
	}
	return t, notes
}

// dcsSection ranks the protection settings of every dataset ([dcsTable]). Its
// notes (settings left out of the ranking) go to the page's notes in a
// sweep; a lone run has no ranking to speak of and is not shown one.
func (b *builder) dcsSection() (*Section, error) {
	rank := &Section{ID: "dcs", Title: "Defences ranked by DCS",
		Lead: "VFLAIR's defence capability score DCS = 1/(1 + √(½(AP − AP*)² + ½(MP − MP*)²)) per cut-layer attack, and T-DCS, its mean over the attacks, each at its tuned attacker's figure where one ran (ATTACK_tuned, docs/methods/tuned.md; the mean over the default figures beside it); " +
			"settings ranked within each dataset (mean over seeds) by the DCS against the strongest attack — the largest AP among every default and tuned figure — then by T-DCS. AP = 2·q95|leak AUC − ½| (0 at chance, 1 for a perfect attack), AP* = 0; " +
			"where the runs attacked the passive party's features too (key feature_attacks), T-DCS over the feature attacks (their AP: the mean R² gain over the own-column decoder, and the categorical accuracy's share of the gain left over the better of the majority prior and the own-column decoder, docs/methods/features.md) and VFLAIR's C-DCS, the mean of the two T-DCS, which then ranks the settings first; " +
			"MP = the test AUC of the model kept (selected on validation, else the final one), MP* = that of the runs without protection. Costs: test AUC lost against MP*, and the mean step time as a multiple of the unprotected run's."}
	var notes []string
	keys := slices.Clone(b.cutKeys)
	sortAttackKeys(keys)
	rank.Table, notes = dcsTable(b.gs, keys)
	if !b.single {
		b.extraNotes = append(b.extraNotes, notes...)
	}
	if len(rank.Table.Rows) == 0 || len(b.cutKeys) == 0 {
		rank.Table, rank.Empty = nil, "No setting has both a cut-layer leak figure and a test AUC yet."
	}
	return rank, nil
}

// privacyEps returns the ε a run's privacy record (summary.json "privacy")
// holds: the "NAME_eps" figure of the first defence, in protect.Specs
// order, that has an accountant (Spec.Account) and reported one; nil when
// none did.
func privacyEps(privacy map[string]any) *float64 {
	if privacy == nil {
		return nil
	}
	for _, s := range protect.Specs() {
		if s.Account == nil {
			continue
		}
		if v := rawNum(privacy, s.Name+"_eps"); v != nil {
			return v
		}
	}
	return nil
}
