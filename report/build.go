package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// builder holds what every section of the page is drawn from.
type builder struct {
	set     *Set
	gs      []*group
	keys    []string // every leak key, cut layer first (leakKeys)
	cutKeys []string // the cut-layer keys among them
	ds      []string // datasets, in group order
	single  bool     // a lone run rather than a sweep
	multiDS bool     // more than one dataset: names and captions say which
	// extraNotes are notes that sections add to the page's.
	extraNotes []string
}

func newBuilder(set *Set) *builder {
	b := &builder{set: set, gs: groups(set.Runs), keys: leakKeys(set.Runs), single: !set.Sweep}
	for _, k := range b.keys {
		if _, l := splitKey(k); l == "cut" {
			b.cutKeys = append(b.cutKeys, k)
		}
	}
	b.ds = datasets(b.gs)
	b.multiDS = len(b.ds) > 1
	return b
}

// Build draws every figure of set and assembles the page (nothing is
// written).
func Build(set *Set) (*Page, error) {
	b := newBuilder(set)
	page := b.header()
	page.Notes = b.notes()
	byID := map[string]*Section{}
	for _, sec := range []func() (*Section, error){b.tradeoffSection, b.dcsSection, b.matrixSection, b.progressSection, b.layersSection, b.marvellSection, b.utilitySection, b.featuresSection, b.partiesSection, b.integritySection} {
		s, err := sec()
		if err != nil {
			return nil, err
		}
		if s == nil { // a section with nothing to show at all (features)
			continue
		}
		byID[s.ID] = s
		page.Sections = append(page.Sections, s)
	}
	if b.single { // a lone run has no trade-off to speak of: put it last
		page.Sections = []*Section{byID["progress"], byID["utility"], byID["layers"], byID[marvellSectionID], byID["tradeoff"]}
		if f := byID["features"]; f != nil {
			page.Sections = append(page.Sections[:2:2], append([]*Section{f}, page.Sections[2:]...)...)
		}
		if p := byID["parties"]; p != nil {
			page.Sections = append(page.Sections[:1:1], append([]*Section{p}, page.Sections[1:]...)...)
		}
	}
	page.Notes = append(page.Notes, b.extraNotes...)
	page.Table = table(set, b.keys)
	return page, nil
}

// header returns the page with its title, subtitle and (for a lone run)
// headline numbers.
func (b *builder) header() *Page {
	page := &Page{Generated: time.Now().Format("2006-01-02 15:04")}
	abs, _ := filepath.Abs(b.set.Dir)
	if b.single {
		r := b.set.Runs[0]
		page.Title = "splitguard run — " + r.Setting.Label()
		page.Subtitle = abs
		page.KPIs = kpis(r, b.keys)
	} else {
		page.Title = "splitguard sweep"
		page.Subtitle = fmt.Sprintf("%s — %d runs, %d settings", abs, len(b.set.Runs), len(b.gs))
	}
	return page
}

// notes gathers the set's notes, each run's notes and failures, and the
// sweep's runs that left no directory.
func (b *builder) notes() []string {
	set := b.set
	notes := append([]string(nil), set.Notes...)
	for _, r := range set.Runs {
		if strings.HasPrefix(r.Status, "failed") {
			notes = append(notes, r.Name+": "+r.Status)
			continue
		}
		for _, n := range r.Notes {
			if b.single {
				notes = append(notes, n)
			} else {
				notes = append(notes, r.Name+": "+n)
			}
		}
	}
	names := make([]string, 0, len(set.Failed))
	for n := range set.Failed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		notes = append(notes, fmt.Sprintf("%s: %s (no run directory)", n, set.Failed[n]))
	}
	return notes
}

// dsName is the file-name suffix of dataset d's figures ("" when the set
// has one dataset).
func (b *builder) dsName(d string) string {
	if b.multiDS {
		return "_" + slug(d)
	}
	return ""
}

// addFig renders plots, with notes under them, and appends them to s as a
// figure.
func addFig(s *Section, name, caption string, plots [][]*plot.Plot, w, h vg.Length, legendOut bool, notes ...string) error {
	h += vg.Length(len(notes)) * noteLine // the notes get their own room
	pngB, svgB, err := render(plots, w, h, legendOut, notes)
	if err != nil {
		return fmt.Errorf("report: figure %s: %w", name, err)
	}
	wide := len(plots[0]) > 1 // a grid of panels gets the page's whole width
	s.Figures = append(s.Figures, &Figure{Name: name, Caption: caption, PNG: pngB, SVG: svgB, Wide: wide,
		plots: plots, w: w, h: h, legendOut: legendOut, notes: notes})
	return nil
}
