package data

import (
	"fmt"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/configkey"
)

// Defaults applied by [Load] to zero-valued options.
const (
	DefaultTestFrac = 0.1
)

// Options says how [Load] reads and encodes a table. The zero value reads
// a Criteo file with labels, keeps every row and holds out 10% for test.
type Options struct {
	// Format is a registered table format ([TableFormats]: FormatCriteo,
	// the default when empty, FormatAvazu, FormatCSV).
	Format string

	// LabelCol names the label column. Empty means the format's label
	// ("label" for Criteo, "click" for Avazu); FormatCSV has no default:
	// it needs LabelCol, or NoLabel. A label column that is asked for and
	// is missing is an error.
	LabelCol string
	// Positive lists the label values that mean the positive class;
	// Negative those that mean the negative class. Values are compared
	// after trimming surrounding spaces. The rules:
	//
	//   - Neither set: labels must be 0 or 1 (an integer or a decimal such
	//     as "1.0").
	//   - Positive set, Negative not: every other non-empty value is
	//     negative, provided the column holds exactly one such value over
	//     the whole file (a two-class column); a third value is an error
	//     listing the values and their counts.
	//   - Both set: any value in neither list is a bad row.
	//
	// A bad label is an error naming the file, the line and the value, and
	// listing the values the label column holds with their counts; with
	// SkipBadRows the row is skipped and counted.
	Positive, Negative []string
	// NoLabel loads no labels (the party without labels): Dataset.Labels
	// is nil and a label column, if the file has one, is ignored.
	NoLabel bool

	// IDCol names the example-ID column. Empty means the format's default
	// ("id" for Avazu) or, for Criteo and generic CSV, none: the ID is
	// then the 0-based number of the data row in the file (blank lines
	// are not data rows; malformed rows are). In a generic CSV an ID that
	// is not an unsigned decimal integer is hashed with [HashID].
	IDCol string

	// Columns restricts the feature columns loaded (a party owning only
	// some columns); nil loads every column. The label and ID columns are
	// governed by LabelCol/NoLabel and IDCol, not by this list.
	Columns []string
	// Dense and Categorical override the kind of the named columns;
	// Ignore names columns that are not loaded at all. By default
	// Criteo's I* columns are dense and C* categorical, every Avazu column
	// is categorical, and a generic CSV column is dense when it holds at
	// least one number and every value that is not missing (see
	// [IsMissing]) is a finite number, over the whole file.
	Dense, Categorical, Ignore []string
	// DetectRows bounds how many data rows of a generic CSV are examined
	// to detect column kinds: 0 (the default) examines every row, in a
	// first pass over the file before the rows are encoded; N > 0 only the
	// first N rows (one pass; a later value that does not parse in a
	// column detected as dense makes its row bad).
	DetectRows int

	// Sample is the fraction of examples kept, in (0, 1]; 0 means 1.
	Sample float64
	// TestFrac is the fraction of kept examples put in the test split, in
	// [0, 1); 0 means DefaultTestFrac and a negative value means no test
	// split at all.
	TestFrac float64
	// Seed keys the sampling and split decisions (see [Assign]).
	Seed uint64

	// HashBuckets > 0 hashes every category of every column into that
	// many buckets (one pass, no vocabulary, no out-of-vocabulary id).
	HashBuckets int
	// MinCount > 1 folds categories seen fewer than MinCount times in the
	// training split into the out-of-vocabulary id (vocabulary mode only).
	MinCount int
	// LogDense applies x ↦ sign(x)·ln(1+|x|) to dense values (after NA ↦ 0)
	// before min-max scaling, taming Criteo's heavy-tailed integers. Off
	// by default: the authors scaled the raw values.
	LogDense bool

	// SkipBadRows skips malformed rows, counting them in Info.BadRows,
	// instead of failing on the first one.
	SkipBadRows bool

	// chunkRows is how many lines the loader encodes at a time (0:
	// rowsChunk); tests compare chunk sizes, which change nothing.
	chunkRows int
	// synthText makes Generate load its rows from their text, as before
	// the direct source (tests compare the two).
	synthText bool
}

// withDefaults returns o with zero values replaced by defaults, or an
// error naming the first invalid option.
func (o Options) withDefaults() (Options, error) {
	o.Format = strings.ToLower(strings.TrimSpace(o.Format))
	if o.Format == "" {
		o.Format = FormatCriteo
	}
	if _, err := tableFormat(o.Format); err != nil {
		return o, fmt.Errorf("data: %w", err)
	}
	if o.Sample == 0 {
		o.Sample = 1
	}
	if !(o.Sample > 0 && o.Sample <= 1) {
		return o, fmt.Errorf("data: sample fraction %v outside (0, 1]", o.Sample)
	}
	if o.TestFrac == 0 {
		o.TestFrac = DefaultTestFrac
	}
	if o.TestFrac >= 1 || o.TestFrac != o.TestFrac {
		return o, fmt.Errorf("data: test fraction %v outside [0, 1)", o.TestFrac)
	}
	if o.TestFrac < 0 {
		o.TestFrac = 0
	}
	if o.HashBuckets < 0 {
		return o, fmt.Errorf("data: negative hash bucket count %d", o.HashBuckets)
	}
	if o.HashBuckets > 1<<31-1 {
		return o, fmt.Errorf("data: hash bucket count %d exceeds the int32 id range", o.HashBuckets)
	}
	if o.MinCount < 0 {
		return o, fmt.Errorf("data: negative minimum category count %d", o.MinCount)
	}
	if o.DetectRows < 0 {
		return o, fmt.Errorf("data: negative detection row count %d", o.DetectRows)
	}
	if o.NoLabel {
		o.Positive, o.Negative = nil, nil
	}
	o.Positive, o.Negative = trimAll(o.Positive), trimAll(o.Negative)
	if len(o.Negative) > 0 && len(o.Positive) == 0 {
		return o, configkey.Keyed(fmt.Errorf("data: negative label values %q need positive ones (key positive)", o.Negative), "positive")
	}
	for _, n := range o.Negative {
		if slices.Contains(o.Positive, n) {
			return o, fmt.Errorf("data: label value %q is both positive and negative (keys positive and negative)", n)
		}
	}
	for _, v := range append(slices.Clone(o.Positive), o.Negative...) {
		if v == "" {
			return o, fmt.Errorf("data: an empty label value (keys positive and negative): an empty label is always a bad row")
		}
	}
	kinds := map[string]string{}
	for _, l := range []struct {
		kind  string
		names []string
	}{{"dense", o.Dense}, {"categorical", o.Categorical}, {"ignored", o.Ignore}} {
		for _, n := range l.names {
			if k, dup := kinds[n]; dup && k != l.kind {
				return o, fmt.Errorf("data: column %q declared both %s and %s", n, k, l.kind)
			}
			kinds[n] = l.kind
		}
	}
	return o, nil
}

// ColumnKind is the role of a column in a table.
type ColumnKind uint8

// Column kinds.
const (
	KindIgnored ColumnKind = iota // present in the file, not loaded
	KindLabel
	KindID
	KindDense
	KindCategorical
)

// String returns the kind's name as printed by inspect.
func (k ColumnKind) String() string {
	switch k {
	case KindLabel:
		return "label"
	case KindID:
		return "id"
	case KindDense:
		return "dense"
	case KindCategorical:
		return "categorical"
	default:
		return "ignored"
	}
}

// Split is a loaded table: its train and test splits and what was learnt
// while loading it.
type Split struct {
	Train, Test *Dataset
	Info        Info
	// Encoding is how the features were encoded: learnt from the training
	// split by Load, the one given to LoadWith. It is nil for images and
	// data not read from a table.
	Encoding *Encoding
}

// PartInfo counts the rows of one split.
type PartInfo struct {
	Rows      int
	Positives int // 0 when the party has no labels
}

// ColumnInfo describes one column of a loaded table.
type ColumnInfo struct {
	Name  string
	Field int // 0-based position in the file's rows
	Kind  ColumnKind
	// NA counts empty values among the kept rows (train and test).
	NA int64

	// Categorical columns. Seen is the number of distinct values in the
	// training split (vocabulary mode; 0 with hashing). Cardinality is the
	// number of ids (Features.Cardinality): Seen−folded+1 in vocabulary
	// mode, id 0 being the out-of-vocabulary id; the bucket count with
	// hashing. Folded counts training values folded into id 0 by MinCount;
	// TestOOV counts test rows whose value maps to id 0.
	Seen, Cardinality, Folded int
	TestOOV                   int64
	// OOV (LoadWith) counts kept rows (either split) whose value is not in
	// the encoding's vocabulary.
	OOV int64

	// Dense columns: the training split's minimum and maximum (and the
	// log transform when enabled), used for min-max scaling, and the value
	// a missing cell takes before scaling (see [Load]).
	Min, Max, Missing float64
}

// Info summarises a load for the run summary.
type Info struct {
	Path   string
	Format string
	// Delimiter is the field separator found (',' or '\t').
	Delimiter byte
	Header    bool
	// RowsRead counts data rows (bad ones included, blank lines not);
	// RowsKept those in the sample and loaded.
	RowsRead, RowsKept int64
	// BadRows counts malformed rows skipped under SkipBadRows; BadExamples
	// holds the first few of their errors.
	BadRows     int64
	BadExamples []string
	// Labels counts the label column's values over every data row (most
	// frequent first, at most 20 values; OtherLabels counts the rows with
	// further values) when some rows were bad.
	Labels      []LabelCount
	OtherLabels int64
	Bytes       int64 // bytes read (uncompressed)
	// IDFormat says how the ID column's values are written, over every
	// data row whose fields and ID are good (sampled or not); zero
	// ("row numbers") without an ID column and for image sets.
	IDFormat    IDFormat
	Train, Test PartInfo
	HasLabels   bool
	Columns     []ColumnInfo
	HashBuckets int
	MinCount    int
	LogDense    bool
	Sample      float64
	TestFrac    float64
	Seed        uint64
	// Notes are remarks about how the data was prepared that a user
	// should see (e.g. fewer negatives than rebalancing asked for).
	Notes []string
}

// trimAll returns the values with surrounding spaces removed (nil for
// none).
func trimAll(vs []string) []string {
	if len(vs) == 0 {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.TrimSpace(v)
	}
	return out
}
