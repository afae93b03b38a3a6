package data

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/bits"
	"text/tabwriter"
)

// DefaultCardinalityCap is the number of distinct values per column that
// [Inspect] counts exactly before switching to an estimate.
const DefaultCardinalityCap = 100000

// ColumnStats describes one column of an inspected table.
type ColumnStats struct {
	Name string
	Kind ColumnKind
	// NA counts empty values and, in dense columns, the other missing
	// values ([IsMissing]).
	NA int64
	// Distinct is the number of distinct values, NA included as one
	// value. It is exact when Exact is set, else a HyperLogLog estimate
	// (relative standard error about 0.8%).
	Distinct int64
	Exact    bool
	// Dense columns: Invalid counts non-empty values that are not finite
	// numbers; Min, Max and Mean are over the valid non-empty values (NaN
	// when there are none).
	Invalid        int64
	Min, Max, Mean float64
}

// Report is what [Inspect] learns about a table.
type Report struct {
	Path      string
	Format    string
	Delimiter byte
	Header    bool
	// Rows counts data rows with the right number of fields; BadRows
	// those without (skipped), BadExamples the first few of them.
	Rows, BadRows int64
	BadExamples   []string
	HasLabels     bool
	// Positives counts positive labels; BadLabels label values that are
	// neither positive nor negative. Labels counts the label column's
	// values (most frequent first, at most 20; OtherLabels counts the rows
	// holding further values).
	Positives, BadLabels int64
	Labels               []LabelCount
	OtherLabels          int64
	CardinalityCap       int
	Columns              []ColumnStats
}

// PositiveRate is Positives/Rows (NaN without labels or rows).
func (r *Report) PositiveRate() float64 {
	if !r.HasLabels || r.Rows == 0 {
		return math.NaN()
	}
	return float64(r.Positives) / float64(r.Rows)
}

// Inspect streams the table at path once and reports, per column, its kind
// (resolved from o exactly as [Load] would, sampling and splitting aside),
// NA share, cardinality and, for dense columns, min/max/mean. Rows with the
// wrong number of fields are counted and skipped. Distinct values are
// counted exactly up to cardCap per column (DefaultCardinalityCap when
// cardCap ≤ 0), then estimated. Without o.LabelCol, a Criteo file without a
// label column is inspected as such rather than rejected.
func Inspect(path string, o Options, cardCap int) (*Report, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer src.close()
	return inspect(&loader{name: path, lr: newLineReader(src.r), rewind: src.rewind}, o, cardCap)
}

// InspectReader is [Inspect] reading from r; name is used in errors. Like
// [LoadReader], detecting column kinds over the whole table reads it twice.
func InspectReader(r io.Reader, name string, o Options, cardCap int) (*Report, error) {
	l := &loader{name: name}
	var err error
	if l.lr, l.rewind, _, err = rewindable(r, name); err != nil {
		return nil, err
	}
	return inspect(l, o, cardCap)
}

func inspect(l *loader, o Options, cardCap int) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if cardCap <= 0 {
		cardCap = DefaultCardinalityCap
	}
	first, delim, err := l.inspectSchema(o)
	if err != nil {
		return nil, err
	}
	sc := l.sc
	in := &inspector{l: l, sc: sc, delim: delim, cardCap: cardCap,
		rep:   &Report{Path: l.name, Format: l.o.Format, Delimiter: delim, Header: sc.header, HasLabels: sc.label >= 0, CardinalityCap: cardCap},
		stats: make([]colStat, len(sc.names))}
	for j := range in.stats {
		in.stats[j].exact = make(map[string]struct{})
		in.stats[j].min, in.stats[j].max = math.Inf(1), math.Inf(-1)
		in.stats[j].salt = uint64(j)
	}
	if len(sc.pending) > 0 && l.o.DetectRows == 0 && l.rewind != nil {
		if err := l.detectKindsFirst(sc, delim); err != nil {
			return nil, err
		}
	}
	if err := in.stream(first); err != nil {
		return nil, err
	}
	rep := in.rep
	if rep.Rows == 0 && rep.BadRows == 0 {
		return nil, l.errf("no data rows")
	}
	rep.Labels, rep.OtherLabels = l.labels.sorted(), l.labels.other
	rep.Columns = in.columns()
	return rep, nil
}

// inspectSchema reads the first line and resolves the table's schema into
// l.sc (and the options into l.o): when no label column is named and the
// format's is absent, the table is inspected without labels. It returns
// the first line and the field separator.
func (l *loader) inspectSchema(o Options) ([]byte, byte, error) {
	l.o = o
	first, err := l.firstLine()
	if err != nil {
		return nil, 0, err
	}
	delim := sniffDelimiter(o.Format, first)
	l.lr.delim = delim
	l.fields, err = splitFields(first, delim, l.fields, &l.scratch)
	if err != nil {
		return nil, 0, l.lineErr(l.lr.line, "%v", err)
	}
	sc, err := resolveSchema(o, delim, l.fields)
	if err != nil && o.LabelCol == "" && !o.NoLabel {
		// No label column named and the format's is absent: inspect the
		// table without labels.
		nl := o
		nl.NoLabel = true
		if sc2, err2 := resolveSchema(nl, delim, l.fields); err2 == nil {
			o, sc, err = nl, sc2, nil
			l.o = o
		}
	}
	if err != nil {
		return nil, 0, l.lineErr(l.lr.line, "%v", err)
	}
	l.sc = sc
	return first, delim, nil
}

// detectKindsFirst decides the kinds of the schema's pending columns from
// a first pass over every row (a rewindable file), then rewinds past the
// first line.
func (l *loader) detectKindsFirst(sc *schema, delim byte) error {
	det := newKindDetector(sc)
	if err := l.eachRow(func(f [][]byte, n int64) { det.add(f, n) }); err != nil {
		return err
	}
	det.apply()
	var err error
	if l.lr, err = l.rewind(); err != nil {
		return l.errf("%v", err)
	}
	l.lr.delim = delim
	_, err = l.firstLine()
	return err
}

// inspector gathers a table's report row by row.
type inspector struct {
	l       *loader
	sc      *schema
	delim   byte
	cardCap int
	rep     *Report
	stats   []colStat
}

// stream reads every data row (first too, when it is not a header),
// holding back the first rows while column kinds are still to be detected
// from them.
func (in *inspector) stream(first []byte) error {
	l, sc := in.l, in.sc
	var pending [][]byte // generic CSV: rows held back for kind detection
	var pendingLine []int64
	if !sc.header {
		pending, pendingLine = append(pending, append([]byte(nil), first...)), append(pendingLine, l.lr.line)
	}
	for {
		line, err := l.lr.next()
		if err != nil && err != io.EOF {
			return l.errf("%v", err)
		}
		if err == nil && len(line) == 0 {
			continue
		}
		if len(sc.pending) > 0 {
			if err == nil && (l.o.DetectRows == 0 || len(pending) < l.o.DetectRows) {
				pending, pendingLine = append(pending, append([]byte(nil), line...)), append(pendingLine, l.lr.line)
				continue
			}
			det := newKindDetector(sc)
			for i, b := range pending {
				if f, ferr := splitFields(b, in.delim, nil, new([]byte)); ferr == nil {
					det.add(f, pendingLine[i])
				}
			}
			det.apply()
		}
		for i, b := range pending {
			in.row(b, pendingLine[i])
		}
		pending = nil
		if err == io.EOF {
			return nil
		}
		in.row(line, l.lr.line)
	}
}

// row adds one data row (line n) to the report.
func (in *inspector) row(line []byte, n int64) {
	l, sc, rep := in.l, in.sc, in.rep
	f, err := splitFields(line, in.delim, l.fields, &l.scratch)
	l.fields = f
	if err == nil && len(f) != len(sc.names) {
		err = fmt.Errorf("%d fields, want %d", len(f), len(sc.names))
	}
	if err != nil {
		rep.BadRows++
		if len(rep.BadExamples) < maxBadExamples {
			rep.BadExamples = append(rep.BadExamples, l.lineErr(n, "%v", err).Error())
		}
		return
	}
	rep.Rows++
	for j, b := range f {
		st := &in.stats[j]
		st.add(b, in.cardCap)
		if sc.kinds[j] == KindDense && len(b) > 0 && IsMissing(b) {
			st.na++ // a missing-value token (NA, NaN, …)
		}
		if sc.kinds[j] == KindDense && !IsMissing(b) {
			v, ok := parseNumber(bytes.TrimSpace(b))
			if !ok {
				st.invalid++
				continue
			}
			st.min, st.max = math.Min(st.min, v), math.Max(st.max, v)
			st.sum += v
			st.valid++
		}
	}
	if sc.label >= 0 {
		l.labels.add(f[sc.label])
		v, ok := labelOf(f[sc.label], &l.o)
		if !ok {
			rep.BadLabels++
		}
		rep.Positives += int64(v)
	}
}

// columns returns every column's statistics.
func (in *inspector) columns() []ColumnStats {
	var out []ColumnStats
	for j, n := range in.sc.names {
		st := &in.stats[j]
		cs := ColumnStats{Name: n, Kind: in.sc.kinds[j], NA: st.na, Invalid: st.invalid, Min: math.NaN(), Max: math.NaN(), Mean: math.NaN()}
		if st.exact != nil {
			cs.Distinct, cs.Exact = int64(len(st.exact)), true
		} else {
			cs.Distinct = int64(math.Round(st.hll.estimate()))
		}
		if st.valid > 0 {
			cs.Min, cs.Max, cs.Mean = st.min, st.max, st.sum/float64(st.valid)
		}
		out = append(out, cs)
	}
	return out
}

// colStat accumulates one column's statistics.
type colStat struct {
	na, invalid, valid int64
	min, max, sum      float64
	exact              map[string]struct{} // nil once the cap is passed
	hll                *hyperLogLog
	salt               uint64
}

// add counts value b: NA, and the distinct-value sketches.
func (st *colStat) add(b []byte, cardCap int) {
	if len(b) == 0 {
		st.na++
	}
	if st.exact != nil {
		if _, ok := st.exact[string(b)]; ok {
			return
		}
		if len(st.exact) < cardCap {
			st.exact[string(b)] = struct{}{}
			return
		}
		// Past the cap: move to the estimate.
		st.hll = newHyperLogLog()
		for k := range st.exact {
			st.hll.add(hashBytes(st.salt, []byte(k)))
		}
		st.exact = nil
	}
	st.hll.add(hashBytes(st.salt, b))
}

// hllPrecision is log2 of the number of HyperLogLog registers.
const hllPrecision = 14

// hyperLogLog estimates the number of distinct 64-bit hashes seen
// (Flajolet et al. 2007, with linear counting for small counts).
type hyperLogLog struct{ reg [1 << hllPrecision]uint8 }

func newHyperLogLog() *hyperLogLog { return new(hyperLogLog) }

// add records hash h.
func (s *hyperLogLog) add(h uint64) {
	idx := h >> (64 - hllPrecision)
	rest := h<<hllPrecision | 1<<(hllPrecision-1) // guard bit bounds the rank
	rho := uint8(bits.LeadingZeros64(rest) + 1)
	if rho > s.reg[idx] {
		s.reg[idx] = rho
	}
}

// estimate returns the estimated number of distinct hashes.
func (s *hyperLogLog) estimate() float64 {
	const m = float64(1 << hllPrecision)
	sum, zeros := 0.0, 0
	for _, r := range s.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return e
}

// InspectTextKeys are the configuration keys Report.WriteText names as
// "key NAME", for a caller that names them otherwise (the command line).
var InspectTextKeys = []string{"positive", "negative"}

// WriteText prints the report as a table.
func (r *Report) WriteText(w io.Writer) error {
	delim := "comma"
	if r.Delimiter == '\t' {
		delim = "tab"
	}
	fmt.Fprintf(w, "file:      %s\nformat:    %s (%s-separated, header %v)\nrows:      %d", r.Path, r.Format, delim, r.Header, r.Rows)
	if r.BadRows > 0 {
		fmt.Fprintf(w, " (+%d malformed rows skipped)", r.BadRows)
	}
	fmt.Fprintln(w)
	for _, e := range r.BadExamples {
		fmt.Fprintf(w, "  malformed: %s\n", e)
	}
	if r.HasLabels {
		fmt.Fprintf(w, "positives: %d (rate %.4f)", r.Positives, r.PositiveRate())
		if r.BadLabels > 0 {
			fmt.Fprintf(w, ", %d bad label values", r.BadLabels)
		}
		fmt.Fprintf(w, "\nlabels:    %s\n", DescribeLabels(r.Labels, r.OtherLabels))
		if r.BadLabels > 0 {
			fmt.Fprintln(w, "           (name the label values of each class: key positive, key negative)")
		}
	} else {
		fmt.Fprintln(w, "labels:    none")
	}
	fmt.Fprintf(w, "cardinality: exact up to %d distinct values per column, HyperLogLog estimate (≈) beyond\n\n", r.CardinalityCap)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "column\tkind\tNA %\tdistinct\tmin\tmax\tmean\tinvalid\t")
	for _, c := range r.Columns {
		na := 0.0
		if r.Rows > 0 {
			na = 100 * float64(c.NA) / float64(r.Rows)
		}
		d := fmt.Sprintf("%d", c.Distinct)
		if !c.Exact {
			d = "≈" + d
		}
		lo, hi, mean, inv := "", "", "", ""
		if c.Kind == KindDense {
			lo, hi, mean = fmt.Sprintf("%g", c.Min), fmt.Sprintf("%g", c.Max), fmt.Sprintf("%.4g", c.Mean)
			inv = fmt.Sprintf("%d", c.Invalid)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", c.Name, c.Kind, na, d, lo, hi, mean, inv)
	}
	return tw.Flush()
}
