package data

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/internal/par"
)

// maxBadExamples bounds how many bad-row messages Info keeps.
const maxBadExamples = 5

// Load reads the table at path (".gz" is decompressed) and returns its
// train and test splits, encoded per METHODS §6:
//
//   - Rows are streamed; only the sampled rows are kept, already encoded
//     (int32 category ids, float32 dense values). One pass over the file,
//     in chunks of lines parsed on every core and committed in line order
//     (rows.go), with the rows, ids and errors of one line at a time.
//   - Sampling and the split are decided by [Assign] on (Seed, example ID).
//   - An empty categorical value is a category of its own (NA); an empty
//     dense value is 0.
//   - Vocabulary mode (HashBuckets == 0): each categorical column's ids are
//     1, 2, … for its training values in byte order of their text, so
//     that the order of the rows changes nothing; id 0 is the
//     out-of-vocabulary id, used for values never seen in training (or
//     seen fewer than MinCount times there). Values are given provisional
//     ids as they stream by and renumbered at the end, so the vocabulary
//     is built from the training split only and the file is read once.
//   - Hashing mode (HashBuckets = N > 0): id = FNV-1a(column name, value)
//     mod N, no vocabulary.
//   - Dense values: NA ↦ 0, optionally x ↦ sign(x)·ln(1+|x|) (LogDense),
//     then min-max scaling with the training split's minimum and maximum,
//     clipped into [0, 1] (test values outside the training range are
//     clipped; a constant column scales to 0).
//
// A malformed row (wrong number of fields, a dense value that is not a
// number, a bad label, a bad ID) is an error naming the file and its
// 1-based line number, counting the header; with SkipBadRows it is
// skipped and counted in Info.BadRows. Rows outside the sample are only
// checked for their field count and ID. An empty file, a missing label
// column, no training rows after sampling and a training split with one
// class are errors, and so are two kept rows with the same example ID (the
// error names the ID and both lines).
func Load(path string, o Options) (*Split, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &loader{o: o, name: path, lr: newLineReader(src.r), rewind: src.rewind}
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(path, ".gz") {
		l.size = fi.Size()
	}
	err = l.run()
	if cerr := src.close(); err == nil && cerr != nil {
		return nil, fmt.Errorf("data: %s: %w", path, cerr)
	}
	if err != nil {
		return nil, err
	}
	return l.finish()
}

// LoadReader is [Load] reading from r; name is used in errors and Info.
// Detecting column kinds over the whole table (Options.DetectRows 0) reads
// it twice: r is rewound if it is an [io.Seeker], else read into memory
// first.
func LoadReader(r io.Reader, name string, o Options) (*Split, error) {
	return loadReaderRows(r, name, o, 0)
}

// loadReaderRows is [LoadReader] of a table whose row count is known to
// be rows (0: unknown), so that the loaded slices are sized once instead
// of growing as rows arrive (the rows loaded do not depend on it).
func loadReaderRows(r io.Reader, name string, o Options, rows int64) (*Split, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &loader{o: o, name: name, rows: rows}
	if l.lr, l.rewind, l.forget, err = rewindable(r, name); err != nil {
		return nil, err
	}
	if err := l.run(); err != nil {
		return nil, err
	}
	return l.finish()
}

// LoadWith reads the table at path (".gz" is decompressed) and encodes it
// with enc, the encoding of another load (typically the training data's
// Split.Encoding), instead of learning one: a trained model can then be
// applied to it. One streaming pass, like [Load]:
//
//   - The feature columns are enc's, in enc's order, found by name (the
//     file may order its columns differently and hold other columns,
//     which are ignored). A column of enc missing from the file is an
//     error naming it.
//   - A categorical value in enc's vocabulary gets its id; any other value
//     (never seen in training) gets the out-of-vocabulary id 0. With hash
//     buckets the id is the hash, as in training.
//   - A dense value is transformed as in training (NA ↦ 0, the log option)
//     and scaled with enc's minimum and maximum, clipped to [0, 1].
//   - The format, the ID column and the label column and values are enc's.
//
// From o it takes the sampling and the split (Sample, TestFrac, Seed: the
// rows fall into Train and Test exactly as [Load] would put them), NoLabel
// and SkipBadRows. The options that enc determines (Format, LabelCol,
// Positive, Negative, IDCol, Columns, Dense, Categorical, HashBuckets,
// MinCount, LogDense) may be left unset; a value that disagrees with enc
// is an error naming it. Unlike Load, an empty training split and a split
// with one class are not errors. The returned Split's Encoding is enc; its
// Info counts per column the rows whose value was out of vocabulary
// (ColumnInfo.OOV). Loading the training file itself with its own
// encoding gives exactly the features Load gave.
func LoadWith(path string, o Options, enc *Encoding) (*Split, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	s, err := loadWith(newLineReader(src.r), src.rewind, path, o, enc)
	if cerr := src.close(); err == nil && cerr != nil {
		return nil, fmt.Errorf("data: %s: %w", path, cerr)
	}
	return s, err
}

// LoadReaderWith is [LoadWith] reading from r; name is used in errors and
// Info. A repeated example ID is named by its lines only when r is an
// [io.Seeker] (the table is read again to find them).
func LoadReaderWith(r io.Reader, name string, o Options, enc *Encoding) (*Split, error) {
	if _, ok := r.(io.ReadSeeker); ok {
		lr, rewind, _, err := rewindable(r, name)
		if err != nil {
			return nil, err
		}
		return loadWith(lr, rewind, name, o, enc)
	}
	return loadWith(newLineReader(r), nil, name, o, enc)
}

// loadWith is [LoadReaderWith] over lr; rewind, when set, reads the table
// again from its start.
func loadWith(lr *lineReader, rewind func() (*lineReader, error), name string, o Options, enc *Encoding) (*Split, error) {
	if enc == nil {
		return nil, fmt.Errorf("data: %s: no encoding to load with", name)
	}
	if err := enc.Validate(); err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	o, err := enc.options(o)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	if o, err = o.withDefaults(); err != nil {
		return nil, err
	}
	l := &loader{o: o, name: name, lr: lr, rewind: rewind, enc: enc}
	if err := l.run(); err != nil {
		return nil, err
	}
	return l.finish()
}

// catCol is the state of one categorical column while loading.
type catCol struct {
	field   int
	name    string
	salt    uint64 // hashing mode
	buckets int    // hashing mode: the bucket count; 0 in vocabulary mode
	// Vocabulary mode: provisional ids in order of first appearance in
	// any kept row, training counts per provisional id, and the
	// provisional ids seen in the training split (renumbered in byte
	// order of their values at the end: vocabularies).
	// With an encoding (LoadWith), vocab maps the encoding's values to
	// their final ids and oov counts kept rows whose value is not in it.
	vocab map[string]int32
	// short holds, when learning, the provisional ids of the values of at
	// most 8 bytes instead of vocab: short[n] those of n bytes, keyed by
	// shortKey (an integer key is found with one memory access, where a
	// string's bytes are another; Criteo's values are 8 hex digits).
	short      [9]map[uint64]int32
	trainCount []uint32
	trainOrder []int32
	na, oov    int64
}

// denseCol is the state of one dense column while loading.
type denseCol struct {
	field    int
	name     string
	min, max float64 // over the training split, or the encoding's
	log      bool
	na       int64
	// sum and n accumulate the training split's values that are not
	// missing; missing is the value a missing cell takes (the encoding's,
	// or learnt at the end: the mean for csv, 0 for Criteo and Avazu).
	sum     exactSum // csv only (imputeMean): exact, so the row order changes nothing
	n       int64
	missing float64
}

// part accumulates the encoded rows of one split.
type part struct {
	ids    []uint64
	labels []uint8
	cat    []int32
	dense  []float32
	pos    int
}

// loader holds the state of one Load.
type loader struct {
	o    Options
	name string
	lr   *lineReader
	// rewind, when set, restarts lr at the beginning of the table (the
	// kind-detection pass reads it first).
	rewind func() (*lineReader, error)
	// forget, when set, tells a reader kept in memory for rewind that it
	// will not be rewound (rewind is then nil).
	forget func()
	sc     *schema
	// enc, when set, is the encoding to apply (LoadWith); encFields[i] is
	// the field of enc.Columns[i].
	enc       *Encoding
	encFields []int

	cats  []catCol
	dense []denseCol
	train part
	test  part

	fields  [][]byte
	scratch []byte

	rowsRead, rowsKept, bad int64
	badExamples             []string
	// firstBadKeys are the configuration keys the first bad example
	// names (its configkey.Error's), for the error quoting it.
	firstBadKeys []string
	// idFormat counts how the rows' IDs are written (rows whose fields
	// and ID are good, sampled or not).
	idFormat IDFormat

	// labels counts the label column's values over every data row.
	labels labelTally
	// labelErr is the first bad-label error when bad rows are not
	// skipped: the rest of the file is then only read to count labels.
	labelErr error
	// labelBad is set by encode when the row's label is what is wrong.
	labelBad bool
	// implicitNeg and thirdLabel track, with positive values but no
	// negative ones, the values taken as negative.
	implicitNeg string
	implicitSet bool
	thirdLabel  string
	thirdLine   int64
	imputeMean  bool // the format's ImputeMean: a missing numeric cell takes the training mean

	// size is the table's size in bytes when known (an uncompressed
	// file), else 0; reserved is set once the parts' slices were sized
	// from it (reserve).
	size     int64
	reserved bool
	// rows is the table's row count when known in advance (a generated
	// table, Generate), else 0: reserve then sizes from it.
	rows int64
	// direct, when set, gives the rows after those read ahead already
	// parsed (a generated table: synthdirect.go).
	direct *directRows
}

// reserveAfter is how many kept rows the loader reads before it sizes the
// parts' slices for the rest of a table of known size: enough lines to
// estimate their mean length and each part's share.
const reserveAfter = 4096

// reserve grows every part's slices once to hold the rows the rest of the
// table is expected to add: the bytes left over the mean line length so
// far, times the part's share of the lines so far, plus 5%. Appending
// then rarely copies, which was a third of the time spent encoding a
// large table. It only sets capacities, so the rows loaded do not depend
// on it; an estimate that is short or long costs a copy or some slack.
func (l *loader) reserve(lines, read int64) {
	l.reserved = true
	var left float64
	switch {
	case lines <= 0:
		return
	case l.rows > 0:
		// A generated table: its rows are known.
		if l.rows <= lines {
			return
		}
		left = float64(l.rows - lines)
	case l.size <= read || read <= 0:
		return
	default:
		left = float64(l.size-read) / (float64(read) / float64(lines))
	}
	nc, nd := len(l.cats), len(l.dense)
	for _, p := range []*part{&l.train, &l.test} {
		more := int(1.05*left*float64(len(p.ids))/float64(lines)) + 16
		p.ids = growExact(p.ids, more)
		if l.sc.label >= 0 {
			p.labels = growExact(p.labels, more)
		}
		p.cat = growExact(p.cat, more*nc)
		p.dense = growExact(p.dense, more*nd)
	}
}

// growExact returns s with room for n more elements and, when it had to
// move, no more: slices.Grow would round the capacity up by a quarter.
func growExact[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	return append(make([]T, 0, len(s)+n), s...)
}

// errf formats an error about the table as a whole.
func (l *loader) errf(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", l.o.Format, l.name, fmt.Sprintf(format, args...))
}

// lineErr formats an error about line n.
func (l *loader) lineErr(n int64, format string, args ...any) error {
	return fmt.Errorf("%s: %s line %d: "+format, append([]any{l.o.Format, l.name, n}, args...)...)
}

// run reads the header (or first row), resolves the schema and streams
// every row.
func (l *loader) run() error {
	first, err := l.readSchema()
	if err != nil {
		return err
	}
	buffered, bufferedLine, err := l.prepare(first)
	if err != nil {
		return err
	}
	return l.stream(buffered, bufferedLine)
}

// prepare decides the column kinds and sets up the columns' states after
// readSchema returned the first line; it returns the lines read ahead
// (the first when it is data, and those the kinds were detected from)
// with their line numbers.
func (l *loader) prepare(first []byte) ([][]byte, []int64, error) {
	var err error
	// The lines read ahead: the first when it is data, and the rows a
	// generic CSV's column kinds are detected from.
	var buffered [][]byte
	var bufferedLine []int64
	if !l.sc.header {
		// The first line is data: keep a copy, it is processed below.
		buffered, bufferedLine = append(buffered, bytes.Clone(first)), append(bufferedLine, l.lr.line)
	}
	if buffered, bufferedLine, err = l.detectKinds(buffered, bufferedLine); err != nil {
		return nil, nil, err
	}
	tf, _ := LookupTableFormat(l.o.Format)
	l.imputeMean = tf.ImputeMean
	if l.enc != nil {
		if err := l.setupEncoding(); err != nil {
			return nil, nil, err
		}
	} else {
		l.setup()
	}
	return buffered, bufferedLine, nil
}

// stream encodes the lines read ahead and the rest of the rows, then
// checks the labels and the IDs.
func (l *loader) stream(buffered [][]byte, bufferedLine []int64) error {
	if err := l.encodeRows(buffered, bufferedLine); err != nil {
		return err
	}
	if l.labelErr != nil {
		return configkey.Keyed(fmt.Errorf("%w%s", l.labelErr, l.labels.advice(l.sc.names[l.sc.label], l.o)), adviceKeys(l.o)...)
	}
	return l.checkUniqueIDs()
}

// readSchema reads the first line, sniffs the delimiter and resolves the
// schema (bound to the encoding to apply, if any); it returns the first
// line, which is the first row without a header (valid until the next
// read).
func (l *loader) readSchema() ([]byte, error) {
	first, err := l.firstLine()
	if err != nil {
		return nil, err
	}
	l.lr.delim = sniffDelimiter(l.o.Format, first)
	l.fields, err = splitFields(first, l.lr.delim, l.fields, &l.scratch)
	if err != nil {
		return nil, l.lineErr(l.lr.line, "%v", err)
	}
	sc, err := resolveSchema(l.o, l.lr.delim, l.fields)
	if err != nil {
		return nil, l.lineErr(l.lr.line, "%w", err)
	}
	l.sc = sc
	if l.enc != nil {
		if err := l.bindEncoding(); err != nil {
			return nil, err
		}
	}
	if l.forget != nil && !(len(sc.pending) > 0 && l.o.DetectRows == 0) && sc.id < 0 {
		// Neither kind detection nor a duplicate ID's lines will read
		// the table again.
		l.forget()
		l.rewind = nil
	}
	return first, nil
}

// detectKinds decides a generic CSV's column kinds (schema.pending): from
// a first pass over every row, the table then read again, when
// Options.DetectRows is 0 and the table can be rewound; else from the
// first rows, which it reads ahead into buffered (with their line
// numbers), returned.
func (l *loader) detectKinds(buffered [][]byte, bufferedLine []int64) ([][]byte, []int64, error) {
	sc, delim := l.sc, l.lr.delim
	if len(sc.pending) > 0 && l.o.DetectRows == 0 && l.rewind != nil {
		if err := l.detectKindsFirst(sc, delim); err != nil {
			return nil, nil, err
		}
	}
	if len(sc.pending) == 0 {
		return buffered, bufferedLine, nil
	}
	for l.o.DetectRows == 0 || len(buffered) < l.o.DetectRows {
		line, err := l.lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, l.errf("%v", err)
		}
		if len(line) == 0 {
			continue
		}
		buffered, bufferedLine = append(buffered, bytes.Clone(line)), append(bufferedLine, l.lr.line)
	}
	det := newKindDetector(sc)
	for i, b := range buffered {
		if f, err := splitFields(b, delim, nil, new([]byte)); err == nil {
			det.add(f, bufferedLine[i])
		}
	}
	det.apply()
	return buffered, bufferedLine, nil
}

// encodeRows encodes the rows read ahead (buffered, their line numbers
// bufferedLine), then the rest of the table, in chunks (rows.go).
func (l *loader) encodeRows(buffered [][]byte, bufferedLine []int64) error {
	chunk := l.o.chunkRows
	if chunk <= 0 {
		chunk = rowsChunk
	}
	c := &rowChunk{}
	for i, b := range buffered {
		c.add(b, bufferedLine[i], l.lr.read)
		if len(c.ends) == chunk {
			if err := l.encodeChunk(c); err != nil {
				return err
			}
		}
	}
	if l.direct != nil {
		// The rows after the first come parsed (synthdirect.go).
		if err := l.encodeChunk(c); err != nil {
			return err
		}
		return l.direct.run(chunk, &l.lr.read, l.commitChunk)
	}
	for {
		line, err := l.lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The rows before the failed read first: a bad one among
			// them is reported as it would have been.
			if cerr := l.encodeChunk(c); cerr != nil {
				return cerr
			}
			return l.errf("%v", err)
		}
		if len(line) == 0 {
			continue
		}
		c.add(line, l.lr.line, l.lr.read)
		if len(c.ends) == chunk {
			if err := l.encodeChunk(c); err != nil {
				return err
			}
		}
	}
	return l.encodeChunk(c)
}

// checkUniqueIDs refuses a table whose kept rows repeat an example ID (the
// parties join on IDs). The IDs are sorted in a copy unless already in
// order; the lines of a repeated ID are then found by reading the table
// again when it can be. Without an ID column the IDs are the row numbers.
func (l *loader) checkUniqueIDs() error {
	if l.sc.id < 0 {
		return nil
	}
	// An ID decides its split, so a repeated ID is in one part.
	for _, p := range []*part{&l.train, &l.test} {
		ids := p.ids
		if !slices.IsSorted(ids) {
			ids = slices.Clone(ids)
			slices.Sort(ids)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] == ids[i-1] {
				return l.duplicateErr(ids[i])
			}
		}
	}
	return nil
}

// duplicateErr is the error for the repeated example ID id: it names the
// first two lines that give it when the table can be read again.
func (l *loader) duplicateErr(id uint64) error {
	const why = "example IDs must be unique: the parties join on them"
	var lines [2]int64
	var raw [2]string
	found := 0
	if l.rewind != nil {
		lr, err := l.rewind()
		if err == nil {
			lr.delim = l.sc.delim
			first := l.sc.header
			var fields [][]byte
			var scratch []byte
			for found < 2 {
				line, err := lr.next()
				if err != nil {
					break
				}
				if len(line) == 0 {
					continue
				}
				if first {
					first = false
					continue
				}
				f, err := splitFields(line, l.sc.delim, fields, &scratch)
				if err != nil || len(f) != len(l.sc.names) {
					continue
				}
				fields = f
				if v, msg := l.sc.idOf(f[l.sc.id]); msg == "" && v == id {
					lines[found], raw[found] = lr.line, string(f[l.sc.id])
					found++
				}
			}
		}
	}
	if found < 2 {
		return l.errf("example ID %d appears more than once; %s", id, why)
	}
	if raw[0] != raw[1] {
		return l.lineErr(lines[1], "ID %q in column %q is the example ID of %q on line %d (both read as %d); %s",
			raw[1], l.sc.names[l.sc.id], raw[0], lines[0], id, why)
	}
	return l.lineErr(lines[1], "ID %q in column %q already appears on line %d; %s", raw[1], l.sc.names[l.sc.id], lines[0], why)
}

// eachRow calls fn with the fields of every remaining non-blank line (and
// its number); a line that does not split is passed as no fields.
func (l *loader) eachRow(fn func(f [][]byte, n int64)) error {
	for {
		line, err := l.lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return l.errf("%v", err)
		}
		if len(line) == 0 {
			continue
		}
		f, err := splitFields(line, l.sc.delim, l.fields, &l.scratch)
		if err != nil {
			f = f[:0]
		}
		l.fields = f
		fn(f, l.lr.line)
	}
}

// firstLine returns the first non-blank line.
func (l *loader) firstLine() ([]byte, error) {
	for {
		line, err := l.lr.next()
		if err == io.EOF {
			return nil, l.errf("empty file")
		}
		if err != nil {
			return nil, l.errf("%v", err)
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}

// bindEncoding finds the encoding's columns in the schema and gives them
// the encoding's kinds; every other feature column is ignored and nothing
// is left to detect.
func (l *loader) bindEncoding() error {
	sc := l.sc
	index := make(map[string]int, len(sc.names))
	for j, n := range sc.names {
		index[n] = j
	}
	for j, k := range sc.kinds {
		if k == KindDense || k == KindCategorical {
			sc.kinds[j] = KindIgnored
		}
	}
	sc.pending = nil
	l.encFields = make([]int, len(l.enc.Columns))
	for i, c := range l.enc.Columns {
		j, ok := index[c.Name]
		if !ok {
			return l.errf("column %q (%s, column %d of %d of the encoding) is not in the file", c.Name, c.Kind, i+1, len(l.enc.Columns))
		}
		if k := sc.kinds[j]; k == KindLabel || k == KindID {
			return l.errf("column %q of the encoding is this file's %s column", c.Name, k)
		}
		sc.kinds[j] = c.Kind
		l.encFields[i] = j
	}
	return nil
}

// setupEncoding creates the column states from the encoding, in its order.
func (l *loader) setupEncoding() error {
	for i, c := range l.enc.Columns {
		f := l.encFields[i]
		switch c.Kind {
		case KindCategorical:
			cc := catCol{field: f, name: c.Name, salt: hashBytes(1, []byte(c.Name)), buckets: c.Buckets}
			if c.Buckets == 0 {
				var err error
				if cc.vocab, err = c.vocabIndex(); err != nil {
					return fmt.Errorf("data: %s: %w", l.name, err)
				}
			}
			l.cats = append(l.cats, cc)
		case KindDense:
			l.dense = append(l.dense, denseCol{field: f, name: c.Name, min: c.Min, max: c.Max, log: c.Log, missing: c.Missing})
		}
	}
	return nil
}

// setup creates the column states from the schema.
func (l *loader) setup() {
	for j, k := range l.sc.kinds {
		name := l.sc.names[j]
		switch k {
		case KindCategorical:
			c := catCol{field: j, name: name, salt: hashBytes(1, []byte(name)), buckets: l.o.HashBuckets}
			if l.o.HashBuckets == 0 {
				c.vocab = make(map[string]int32)
			}
			l.cats = append(l.cats, c)
		case KindDense:
			l.dense = append(l.dense, denseCol{field: j, name: name, min: math.Inf(1), max: math.Inf(-1), log: l.o.LogDense})
		}
	}
}

// badLabelWhy says what a label value should have been.
func (l *loader) badLabelWhy() string {
	switch {
	case len(l.o.Positive) == 0:
		return "not 0 or 1"
	case len(l.o.Negative) == 0:
		return "empty"
	}
	return fmt.Sprintf("neither positive %q nor negative %q", l.o.Positive, l.o.Negative)
}

// noteImplicitNegative records a value taken as negative because it is not
// positive (positive values given, negative ones not): the first such value
// is the negative class; another one is remembered for the error at the
// end.
func (l *loader) noteImplicitNegative(v []byte, line int64) {
	switch {
	case !l.implicitSet:
		l.implicitNeg, l.implicitSet = string(v), true
	case l.thirdLabel == "" && string(v) != l.implicitNeg:
		l.thirdLabel, l.thirdLine = string(v), line
	}
}

// scaleDense min-max scales a dense value with the training range
// [lo, hi] and clips it into [0, 1]; a constant column scales to 0. The
// value is stored as float32 before scaling, as Load stores it.
func scaleDense(v float32, lo, hi float64) float32 {
	x, span := 0.0, hi-lo
	if span > 0 {
		x = (float64(v) - lo) / span
	}
	return float32(min(max(x, 0), 1))
}

// vocabRemap is one categorical column's final vocabulary (vocabulary
// mode, when learning): remap takes a provisional id to its final id (0 for
// a value folded into the out-of-vocabulary id), vocab[id-1] is final id
// id's value.
type vocabRemap struct {
	remap []int32
	vocab []string
}

// vocabularies builds each vocabulary-mode column's final vocabulary: the
// values seen at least MinCount times in the training split, in byte order
// of their text, get ids 1, 2, …; the others fold into id 0. The ids thus
// depend on the set of training values and their counts, never on the
// order of the rows. The columns are sorted in parallel.
func (l *loader) vocabularies() []vocabRemap {
	out := make([]vocabRemap, len(l.cats))
	parts := min(runtime.GOMAXPROCS(0), maxLoadParts, len(l.cats))
	par.Do(parts, func(w int) {
		for j := w; j < len(l.cats); j += parts {
			c := &l.cats[j]
			if c.buckets > 0 {
				continue
			}
			text := make([]string, len(c.trainCount)) // by provisional id
			for v, p := range c.vocab {
				text[p] = v
			}
			for n, m := range c.short {
				for k, p := range m {
					text[p] = shortText(k, n)
				}
			}
			kept := make([]int32, 0, len(c.trainOrder))
			for _, p := range c.trainOrder {
				if int(c.trainCount[p]) >= l.o.MinCount {
					kept = append(kept, p)
				}
			}
			slices.SortFunc(kept, func(a, b int32) int { return strings.Compare(text[a], text[b]) })
			r := vocabRemap{remap: make([]int32, len(c.trainCount)), vocab: make([]string, len(kept))}
			for i, p := range kept {
				r.remap[p] = int32(i + 1)
				r.vocab[i] = text[p]
			}
			out[j] = r
		}
	})
	return out
}

// finish renumbers the vocabularies, scales the dense values and builds
// the split and its encoding (with an encoding given, both are done).
func (l *loader) finish() (*Split, error) {
	info := Info{
		Path: l.name, Format: l.o.Format, Delimiter: l.sc.delim, Header: l.sc.header,
		RowsRead: l.rowsRead, RowsKept: l.rowsKept, BadRows: l.bad, BadExamples: l.badExamples,
		Bytes: l.lr.read, HasLabels: l.sc.label >= 0, HashBuckets: l.o.HashBuckets, IDFormat: l.idFormat,
		MinCount: l.o.MinCount, LogDense: l.o.LogDense, Sample: l.o.Sample, TestFrac: l.o.TestFrac, Seed: l.o.Seed,
		Train: PartInfo{Rows: len(l.train.ids), Positives: l.train.pos},
		Test:  PartInfo{Rows: len(l.test.ids), Positives: l.test.pos},
	}
	if err := l.checkRows(); err != nil {
		return nil, err
	}
	if l.bad > 0 && l.sc.label >= 0 {
		info.Labels, info.OtherLabels = l.labels.sorted(), l.labels.other
	}
	if info.HasLabels && l.enc == nil && (l.train.pos == 0 || l.train.pos == len(l.train.ids)) {
		return nil, l.errf("the training split has only one class (%d rows, %d positives)", len(l.train.ids), l.train.pos)
	}

	enc := l.enc
	if enc == nil {
		enc = &Encoding{Format: l.o.Format, Positive: l.o.Positive, Negative: l.o.Negative, MinCount: l.o.MinCount}
		if l.sc.id >= 0 {
			enc.IDCol = l.sc.names[l.sc.id]
		}
		if l.sc.label >= 0 {
			enc.LabelCol = l.sc.names[l.sc.label]
		}
	} else {
		info.HashBuckets, info.MinCount, info.LogDense = 0, enc.MinCount, false
	}
	nc, nd := len(l.cats), len(l.dense)
	var remaps []vocabRemap
	if l.enc == nil {
		remaps = l.vocabularies()
	}
	f := &finished{
		card: make([]int, nc), catNames: make([]string, nc), denseNames: make([]string, nd),
		cols:   make(map[int]ColumnInfo, len(l.sc.names)),
		learnt: make(map[int]ColumnEncoding, nc+nd), // by field, when learning
	}
	l.finishCategorical(f, &info, remaps)
	l.finishDense(f, &info)
	for j, n := range l.sc.names {
		if _, ok := f.cols[j]; !ok {
			f.cols[j] = ColumnInfo{Name: n, Field: j, Kind: l.sc.kinds[j]}
		}
		info.Columns = append(info.Columns, f.cols[j])
		if c, ok := f.learnt[j]; ok && l.enc == nil {
			enc.Columns = append(enc.Columns, c)
		}
	}
	return &Split{Train: f.dataset(&l.train, info.HasLabels), Test: f.dataset(&l.test, info.HasLabels), Info: info, Encoding: enc}, nil
}

// checkRows refuses a read that kept nothing to train on: no data rows,
// every row malformed, no training row (when learning an encoding), or a
// third label value.
func (l *loader) checkRows() error {
	switch {
	case l.rowsRead == 0:
		return l.errf("no data rows")
	case l.rowsRead == l.bad:
		if l.sc.label < 0 {
			return configkey.Keyed(l.errf("all %d data rows are malformed; first: %s", l.bad, l.badExamples[0]), l.firstBadKeys...)
		}
		advice := l.labels.advice(l.sc.names[l.sc.label], l.o)
		return configkey.Keyed(l.errf("all %d data rows are malformed; first: %s%s", l.bad, l.badExamples[0], advice), append(adviceKeys(l.o), l.firstBadKeys...)...)
	case len(l.train.ids) == 0 && l.enc == nil:
		return l.errf("no training rows after sampling (%d rows read, %d kept, sample %g, test fraction %g)",
			l.rowsRead, l.rowsKept, l.o.Sample, l.o.TestFrac)
	}
	if l.thirdLabel != "" {
		return configkey.Keyed(l.lineErr(l.thirdLine, "label %q in column %q is neither positive %q nor %q, the value taken as negative so far%s",
			l.thirdLabel, l.sc.names[l.sc.label], l.o.Positive, l.implicitNeg, l.labels.advice(l.sc.names[l.sc.label], l.o)), adviceKeys(l.o)...)
	}
	return nil
}

// finished is what finish assembles of the loaded columns: the
// categorical columns' cardinalities and names, the dense columns' names,
// every loaded column's report and, when learning, its encoding (by
// field).
type finished struct {
	card                 []int
	catNames, denseNames []string
	cols                 map[int]ColumnInfo
	learnt               map[int]ColumnEncoding
}

// finishCategorical fixes every categorical column's ids: hashed, read
// through the given encoding's vocabulary, or (learning) remapped to the
// final vocabulary of remaps.
func (l *loader) finishCategorical(f *finished, info *Info, remaps []vocabRemap) {
	nc := len(l.cats)
	for j, c := range l.cats {
		ci := ColumnInfo{Name: c.name, Field: c.field, Kind: KindCategorical, NA: c.na, OOV: c.oov}
		f.catNames[j] = c.name
		switch {
		case c.buckets > 0:
			f.card[j] = c.buckets
			f.learnt[c.field] = ColumnEncoding{Name: c.name, Kind: KindCategorical, Buckets: c.buckets}
			if l.enc != nil {
				info.HashBuckets = c.buckets
			}
		case l.enc != nil:
			f.card[j] = len(c.vocab) + 1
			ci.Seen = len(c.vocab)
			l.cats[j].vocab = nil
		default:
			remap, vocab := remaps[j].remap, remaps[j].vocab
			next := int32(len(vocab) + 1)
			ci.Folded = len(c.trainOrder) - len(vocab)
			for r := j; r < len(l.train.cat); r += nc {
				l.train.cat[r] = remap[l.train.cat[r]]
			}
			for r := j; r < len(l.test.cat); r += nc {
				v := remap[l.test.cat[r]]
				l.test.cat[r] = v
				if v == 0 {
					ci.TestOOV++
				}
			}
			f.learnt[c.field] = ColumnEncoding{Name: c.name, Kind: KindCategorical, Vocab: vocab}
			f.card[j] = int(next)
			ci.Seen = len(c.trainOrder)
			l.cats[j].vocab, l.cats[j].short = nil, [9]map[uint64]int32{}
		}
		ci.Cardinality = f.card[j]
		f.cols[c.field] = ci
	}
}

// finishDense scales every dense column (learning: by its training range,
// missing values imputed first); with a given encoding they were scaled as
// read.
func (l *loader) finishDense(f *finished, info *Info) {
	nd := len(l.dense)
	for j, d := range l.dense {
		f.denseNames[j] = d.name
		if l.enc == nil {
			if d.n == 0 {
				// No training value (all missing, or no training rows).
				d.min, d.max = 0, 0
			} else if l.imputeMean {
				d.missing = d.sum.mean(d.n)
			}
			scale := func(v []float32) {
				for r := j; r < len(v); r += nd {
					x := v[r]
					if x != x {
						x = float32(d.missing)
					}
					v[r] = scaleDense(x, d.min, d.max)
				}
			}
			scale(l.train.dense)
			scale(l.test.dense)
			f.learnt[d.field] = ColumnEncoding{Name: d.name, Kind: KindDense, Min: d.min, Max: d.max, Log: d.log, Missing: d.missing}
		} else if d.log {
			info.LogDense = true
		}
		f.cols[d.field] = ColumnInfo{Name: d.name, Field: d.field, Kind: KindDense, NA: d.na, Min: d.min, Max: d.max, Missing: d.missing}
	}
}

// dataset returns part p as a Dataset (labels kept when the table has
// them; empty, not nil, slices).
func (f *finished) dataset(p *part, labels bool) *Dataset {
	ds := &Dataset{IDs: p.ids, X: &Features{
		Rows: len(p.ids), NumCat: len(f.card), Cat: p.cat, Cardinality: append([]int(nil), f.card...), CatNames: f.catNames,
		NumDense: len(f.denseNames), Dense: p.dense, DenseNames: f.denseNames,
	}}
	if labels {
		ds.Labels = p.labels
		if ds.Labels == nil {
			ds.Labels = []uint8{}
		}
	}
	if ds.X.Cat == nil {
		ds.X.Cat = []int32{}
	}
	if ds.X.Dense == nil {
		ds.X.Dense = []float32{}
	}
	return ds
}
