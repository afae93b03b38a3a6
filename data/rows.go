package data

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/internal/par"
)

// The loader encodes the data lines in chunks of rowsChunk lines, in
// three passes, so that a large table loads on every core while the rows
// and their errors come out exactly as one line at a time would give:
//
//  1. parse (in parallel, by ranges of lines): split each line into its
//     fields and read what depends on the line alone — the field count,
//     the ID, the split [Assign] gives it, its numeric values — touching
//     no loader state;
//  2. commit (in line order): the label, the bad-row accounting and its
//     errors, the kept row's ID, label and numeric values, and the
//     numeric columns' statistics;
//  3. categorical (in parallel, by columns): each column's values of the
//     committed rows, in line order, through its vocabulary (provisional
//     ids in order of first appearance, renumbered in byte order of the
//     values at the end) or its hash. A column's state is its
//     own, so the columns need no locks.

// rowsChunk is how many lines the loader encodes at a time, unless the
// options say otherwise (Options.chunkRows, for tests).
const rowsChunk = 4096

// maxLoadParts bounds the goroutines a chunk's passes use.
const maxLoadParts = 8

// parsedRow is what the parse pass read from one line.
type parsedRow struct {
	err    error  // the line does not split into fields
	fields bool   // it has the schema's number of fields
	msg    string // why its fields or its ID are bad, "" when they are not
	id     uint64
	kept   bool   // in the sample
	test   bool   // in the test split
	numMsg string // a kept row's first bad numeric value, "" for none
	numKey bool   // numMsg names key categorical
	w      int    // the parse part whose arena holds the label and categorical values
	label  [2]int32
	idKind IDKind // how the ID is written (with an ID column)
}

// parsePart is one parse goroutine's buffers.
type parsePart struct {
	fields  [][]byte
	scratch []byte
	arena   []byte // the chunk's labels and categorical values parsed here
}

// rowChunk holds the lines of one chunk and what the passes make of them.
type rowChunk struct {
	buf   []byte  // the lines, one after another
	ends  []int   // where each line ends in buf
	lines []int64 // each line's number
	reads []int64 // the bytes read when each line was read (for reserve)

	rows  []parsedRow
	dense []float64 // rows × numeric columns
	cats  []int32   // rows × categorical columns × (start, end) in the row's arena
	parts []parsePart

	pending []pendingRow // committed rows whose categorical values are not yet encoded

	// raw are the generated rows from row rawFrom on that fill makes the
	// chunk's rows of (a generated table: synthdirect.go).
	raw     []synthRow
	rawFrom int64
}

// pendingRow is a committed row waiting for the categorical pass.
type pendingRow struct {
	p    *part
	at   int // the row's index in p
	row  int // its index in the chunk
	test bool
}

// add appends one line (copied) read as line number n after read bytes.
func (c *rowChunk) add(line []byte, n, read int64) {
	c.buf = append(c.buf, line...)
	c.ends = append(c.ends, len(c.buf))
	c.lines = append(c.lines, n)
	c.reads = append(c.reads, read)
}

// line returns the chunk's line i.
func (c *rowChunk) line(i int) []byte {
	start := 0
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.buf[start:c.ends[i]]
}

func (c *rowChunk) reset() {
	c.buf, c.ends, c.lines, c.reads = c.buf[:0], c.ends[:0], c.lines[:0], c.reads[:0]
	c.pending = c.pending[:0]
}

// encodeChunk runs the three passes over the chunk's lines and empties it.
// It returns the first bad row's error when bad rows are not skipped.
func (l *loader) encodeChunk(c *rowChunk) error {
	n := len(c.ends)
	if n == 0 {
		return nil
	}
	nc, nd := len(l.cats), len(l.dense)
	c.rows = buf.Grow(c.rows, n)
	c.dense = buf.Grow(c.dense, n*nd)
	c.cats = buf.Grow(c.cats, 2*n*nc)
	parts := min(runtime.GOMAXPROCS(0), maxLoadParts, (n+255)/256)
	for len(c.parts) < parts {
		c.parts = append(c.parts, parsePart{})
	}
	base := uint64(l.rowsRead)
	par.Do(parts, func(w int) {
		pp := &c.parts[w]
		pp.arena = pp.arena[:0]
		for i := n * w / parts; i < n*(w+1)/parts; i++ {
			l.parseRow(pp, c.line(i), base+uint64(i), &c.rows[i], c.dense[i*nd:(i+1)*nd], c.cats[2*i*nc:2*(i+1)*nc])
			c.rows[i].w = w
		}
	})
	return l.commitChunk(c)
}

// commitChunk runs the commit and categorical passes over the chunk's
// parsed rows (one per entry of c.ends) and empties it. It returns the
// first bad row's error when bad rows are not skipped.
func (l *loader) commitChunk(c *rowChunk) error {
	defer c.reset()
	for i := range len(c.ends) {
		if err := l.commitRow(c, i); err != nil {
			return err
		}
	}
	l.encodeCategorical(c)
	return nil
}

// parseRow reads line, the data row numbered rowNum (its ID when the table
// has no ID column), into r, its numeric values into dense and the
// arena offsets of its categorical values into cats. It changes nothing
// but pp and its arguments.
func (l *loader) parseRow(pp *parsePart, line []byte, rowNum uint64, r *parsedRow, dense []float64, cats []int32) {
	*r = parsedRow{}
	sc := l.sc
	f, err := splitFields(line, sc.delim, pp.fields, &pp.scratch)
	if err != nil {
		r.err = err
		return
	}
	pp.fields = f
	if len(f) != len(sc.names) {
		r.msg = fmt.Sprintf("%d fields, want %d", len(f), len(sc.names))
		return
	}
	r.fields = true
	if sc.label >= 0 {
		// Kept before the ID is read: after a bad label, a row's label is
		// counted whatever its ID (commitRow).
		r.label = pp.keep(f[sc.label])
	}
	id := rowNum
	if sc.id >= 0 {
		r.idKind = ClassifyID(f[sc.id])
		if id, r.msg = sc.idOf(f[sc.id]); r.msg != "" {
			return
		}
	}
	r.id = id
	r.kept, r.test = Assign(l.o.Seed, id, l.o.Sample, l.o.TestFrac)
	if !r.kept {
		return
	}
	for i := range l.dense {
		d := &l.dense[i]
		b := f[d.field]
		if IsMissing(b) {
			dense[i] = math.NaN() // missing
			continue
		}
		v, ok := parseNumber(bytes.TrimSpace(b))
		if !ok {
			hint := ""
			if tf, _ := LookupTableFormat(l.o.Format); tf.DetectKinds {
				hint = " (declare the column categorical, key categorical, if it is not numeric)"
			}
			r.numMsg = fmt.Sprintf("numeric column %q: %q is not a number%s", d.name, b, hint)
			r.numKey = hint != ""
			return
		}
		if d.log {
			v = math.Copysign(math.Log1p(math.Abs(v)), v)
		}
		dense[i] = v
	}
	for i := range l.cats {
		o := pp.keep(f[l.cats[i].field])
		cats[2*i], cats[2*i+1] = o[0], o[1]
	}
}

// idOf returns the example ID an ID field b gives: the number itself for
// an unsigned integer, else (unless the format's IDs must be integers)
// [HashID] of the text; msg says why b is not an ID.
func (sc *schema) idOf(b []byte) (id uint64, msg string) {
	v, ok := parseUint64(b)
	if ok {
		return v, ""
	}
	if sc.idMode == idUint {
		return 0, fmt.Sprintf("ID %q in column %q is not an unsigned integer", b, sc.names[sc.id])
	}
	if len(b) == 0 {
		return 0, fmt.Sprintf("empty ID in column %q", sc.names[sc.id])
	}
	return hashBytes(0, b), ""
}

// keep copies b into the arena and returns where it is.
func (pp *parsePart) keep(b []byte) [2]int32 {
	start := len(pp.arena)
	pp.arena = append(pp.arena, b...)
	return [2]int32{int32(start), int32(len(pp.arena))}
}

// bytesAt returns the arena bytes at o of the part that parsed row r.
func (c *rowChunk) bytesAt(r *parsedRow, o [2]int32) []byte {
	return c.parts[r.w].arena[o[0]:o[1]]
}

// commitRow is the commit pass for the chunk's row i. It returns an error
// only when the row is bad and bad rows are not skipped.
func (l *loader) commitRow(c *rowChunk, i int) error {
	r := &c.rows[i]
	n := c.lines[i]
	if l.labelErr != nil {
		// After a bad label: only count the label column's values.
		if r.err == nil && r.fields {
			l.labels.add(c.bytesAt(r, r.label))
		}
		return nil
	}
	l.rowsRead++
	l.labelBad = false
	msg, err := l.commit(c, i)
	if msg == "" && err == nil {
		return nil
	}
	if err == nil {
		err = l.lineErr(n, "%s", msg)
	} else {
		err = l.lineErr(n, "%v", err)
	}
	if r.numKey && msg == r.numMsg {
		err = configkey.Keyed(err, "categorical")
	}
	if !l.o.SkipBadRows {
		if l.labelBad {
			l.labelErr = err
			return nil
		}
		return err
	}
	l.bad++
	if len(l.badExamples) == 0 {
		l.firstBadKeys = configkey.KeysOf(err)
	}
	if len(l.badExamples) < maxBadExamples {
		l.badExamples = append(l.badExamples, err.Error())
	}
	return nil
}

// commit checks the chunk's row i's label and, for a good row in the
// sample, stores its ID, label and numeric values and queues it for the
// categorical pass. A bad row is reported by a non-empty message or an
// error, before any state changes.
func (l *loader) commit(c *rowChunk, i int) (string, error) {
	r := &c.rows[i]
	sc := l.sc
	if r.err != nil {
		return "", r.err
	}
	if r.msg != "" {
		return r.msg, nil
	}
	if sc.id >= 0 {
		l.idFormat.Counts[r.idKind]++
	}
	var label uint8
	if sc.label >= 0 {
		lb := c.bytesAt(r, r.label)
		l.labels.add(lb)
		var ok bool
		if label, ok = labelOf(lb, &l.o); !ok {
			l.labelBad = true
			return fmt.Sprintf("label %q in column %q is %s", lb, sc.names[sc.label], l.badLabelWhy()), nil
		}
		if label == 0 && len(l.o.Positive) > 0 && len(l.o.Negative) == 0 {
			l.noteImplicitNegative(bytes.TrimSpace(lb), c.lines[i])
		}
	}
	if !r.kept {
		return "", nil
	}
	if r.numMsg != "" {
		return r.numMsg, nil
	}

	// The row is good: commit it.
	l.rowsKept++
	if l.rowsKept == reserveAfter && (l.size > 0 || l.rows > 0) && !l.reserved {
		l.reserve(c.lines[i], c.reads[i])
	}
	p := &l.train
	if r.test {
		p = &l.test
	}
	p.ids = append(p.ids, r.id)
	if sc.label >= 0 {
		p.labels = append(p.labels, label)
		p.pos += int(label)
	}
	nc, nd := len(l.cats), len(l.dense)
	if at := len(p.ids) - 1; nc > 0 {
		p.cat = append(p.cat, make([]int32, nc)...) // filled by the categorical pass
		c.pending = append(c.pending, pendingRow{p: p, at: at, row: i, test: r.test})
	}
	for k, v := range c.dense[i*nd : (i+1)*nd] {
		d := &l.dense[k]
		miss := math.IsNaN(v)
		if miss {
			d.na++
		}
		if l.enc != nil {
			if miss {
				v = d.missing
			}
			p.dense = append(p.dense, scaleDense(float32(v), d.min, d.max))
			continue
		}
		if miss && !l.imputeMean {
			v, miss = 0, false // Criteo and Avazu: NA ↦ 0, as the authors did
		}
		if !r.test && !miss {
			d.min = math.Min(d.min, v)
			d.max = math.Max(d.max, v)
			if l.imputeMean {
				d.sum.add(v)
			}
			d.n++
		}
		p.dense = append(p.dense, float32(v)) // NaN: imputed in finish
	}
	return "", nil
}

// encodeCategorical is the categorical pass over the chunk's committed
// rows: each column on one goroutine, its rows in line order.
func (l *loader) encodeCategorical(c *rowChunk) {
	nc := len(l.cats)
	if nc == 0 || len(c.pending) == 0 {
		return
	}
	parts := min(runtime.GOMAXPROCS(0), maxLoadParts, nc, (len(c.pending)+255)/256)
	par.Do(parts, func(w int) {
		for j := w; j < nc; j += parts {
			l.encodeColumn(c, j)
		}
	})
}

// encodeColumn encodes categorical column j of the chunk's committed rows.
func (l *loader) encodeColumn(c *rowChunk, j int) {
	col := &l.cats[j]
	nc := len(l.cats)
	for _, pr := range c.pending {
		r := &c.rows[pr.row]
		o := c.cats[2*(pr.row*nc+j):]
		b := c.bytesAt(r, [2]int32{o[0], o[1]})
		if len(b) == 0 {
			col.na++
		}
		var v int32
		switch {
		case col.buckets > 0:
			v = int32(hashBytes(col.salt, b) % uint64(col.buckets))
		case l.enc != nil:
			var ok bool
			if v, ok = col.vocab[string(b)]; !ok {
				col.oov++ // v = 0, the out-of-vocabulary id
			}
		case len(b) <= 8:
			m := col.short[len(b)]
			if m == nil {
				m = make(map[uint64]int32)
				col.short[len(b)] = m
			}
			k := shortKey(b)
			var ok bool
			if v, ok = m[k]; !ok {
				v = int32(len(col.trainCount))
				m[k] = v
				col.trainCount = append(col.trainCount, 0)
			}
			col.count(v, pr.test)
		default:
			var ok bool
			v, ok = col.vocab[string(b)]
			if !ok {
				v = int32(len(col.trainCount))
				col.vocab[string(b)] = v
				col.trainCount = append(col.trainCount, 0)
			}
			col.count(v, pr.test)
		}
		pr.p.cat[pr.at*nc+j] = v
	}
}

// count counts a kept row's value of provisional id v towards the
// training vocabulary (a test row's does not count).
func (col *catCol) count(v int32, test bool) {
	if test {
		return
	}
	if col.trainCount[v] == 0 {
		col.trainOrder = append(col.trainOrder, v)
	}
	col.trainCount[v]++
}

// shortKey is the key of a value b of at most 8 bytes in its length's
// map of catCol.short: its bytes, little-endian, zero-padded.
func shortKey(b []byte) uint64 {
	var a [8]byte
	copy(a[:], b)
	return binary.LittleEndian.Uint64(a[:])
}

// shortText is the value of n bytes whose shortKey is k.
func shortText(k uint64, n int) string {
	var a [8]byte
	binary.LittleEndian.PutUint64(a[:], k)
	return string(a[:n])
}
