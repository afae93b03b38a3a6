package data

import (
	"bytes"
	"math"
	"strconv"

	"github.com/splitguard/splitguard/internal/buf"
)

// Generating rows straight into the loader's chunks.
//
// Generate used to write the synthetic rows as Criteo text and load that
// text, the generator on one goroutine and the loader on another: much of
// the start of a default run went to formatting the numbers and codes as
// text and reading them back. A directRows source gives the
// loader each chunk already parsed — what its parse pass (parseRow) would
// have read from the row's line: the label and categorical values as their
// text in the chunk's arena, the numeric values as numbers, the row's ID
// (its row number) and its split — and the loader's commit and categorical
// passes run as for any table, so the rows, their encoding, the split and
// Info are the text path's (TestGenerateDirectMatchesText compares them
// with loading WriteSynth's bytes). The first row still goes through the
// text path: it fixes the schema exactly as for the text.

// directChunks is how many chunks the generator may draw ahead of the
// loader.
const directChunks = 3

// directRows fills the loader's chunks with generated rows 1, 2, … (row 0
// was the text line that set the schema).
type directRows struct {
	g    *synth
	rows int64
	// fields say, for each dense column and each categorical column, which
	// of the row's fields it reads: 1–13 the integer columns, 14–39 the
	// categorical ones (0 is the label).
	dense, cats []int
	logDense    []bool
	seed        uint64
	sample      float64
	testFrac    float64
}

// criteoFields is the number of fields of a Criteo row: the label, the
// integer columns, the categorical columns.
const criteoFields = 1 + criteoDense + criteoCat

// newDirectRows returns the direct source for loader l, whose schema and
// columns are set up from the generated text's first line, or nil when
// the schema is one it does not produce (every numeric column must read
// an integer field, the label must be field 0 and the IDs the row
// numbers, with no header, no bad rows possible and no encoding given):
// the text path then loads the rest.
func newDirectRows(l *loader, g *synth, rows int64) *directRows {
	sc, o := l.sc, l.o
	if sc == nil || l.enc != nil || sc.header || sc.label != 0 || sc.id >= 0 || len(sc.pending) > 0 ||
		len(sc.names) != criteoFields || len(o.Positive) > 0 || len(o.Negative) > 0 || l.imputeMean {
		return nil
	}
	d := &directRows{g: g, rows: rows, seed: o.Seed, sample: o.Sample, testFrac: o.TestFrac}
	for _, c := range l.dense {
		if c.field < 1 || c.field > criteoDense {
			return nil
		}
		d.dense = append(d.dense, c.field)
		d.logDense = append(d.logDense, c.log)
	}
	for _, c := range l.cats {
		if c.field < 1 || c.field >= criteoFields {
			return nil
		}
		d.cats = append(d.cats, c.field)
	}
	return d
}

// draw draws rows [from, to) into c.raw: the generator's part, whose
// random draws go in sequence.
func (d *directRows) draw(c *rowChunk, from, to int64) {
	c.raw = buf.Grow(c.raw, int(to-from))
	c.rawFrom = from
	for i := range c.raw {
		d.g.next(&c.raw[i])
	}
}

// fill makes c's rows of its drawn rows c.raw as parseRow would have
// parsed their lines (the bytes of those lines are counted in c.reads,
// read being the bytes before the first), and returns the bytes after
// the last. It only reads the generator's fixed keys, so it runs beside
// the next draw.
func (d *directRows) fill(c *rowChunk, read int64) int64 {
	n := len(c.raw)
	nc, nd := len(d.cats), len(d.dense)
	c.rows = buf.Grow(c.rows, n)
	c.dense = buf.Grow(c.dense, n*nd)
	c.cats = buf.Grow(c.cats, 2*n*nc)
	c.lines, c.reads, c.ends = c.lines[:0], c.reads[:0], c.ends[:0]
	if len(c.parts) == 0 {
		c.parts = append(c.parts, parsePart{})
	}
	pp := &c.parts[0]
	pp.arena = pp.arena[:0]
	for i := range n {
		r := &c.raw[i]
		id := uint64(c.rawFrom) + uint64(i)
		read += d.lineBytes(r)
		c.lines = append(c.lines, int64(id)+1) // no header: row k is line k+1
		c.reads = append(c.reads, read)
		c.ends = append(c.ends, 0) // the chunk's row count; no text
		pr := &c.rows[i]
		*pr = parsedRow{fields: true, id: id}
		pr.label = pp.keep([]byte{'0' + r.label})
		pr.kept, pr.test = Assign(d.seed, id, d.sample, d.testFrac)
		if !pr.kept {
			continue
		}
		dense := c.dense[i*nd : (i+1)*nd]
		for k, f := range d.dense {
			v := r.ints[f-1]
			if v < 0 {
				dense[k] = math.NaN() // missing
				continue
			}
			x := float64(v) // parseNumber of its decimal digits
			if d.logDense[k] {
				x = math.Copysign(math.Log1p(math.Abs(x)), x)
			}
			dense[k] = x
		}
		cats := c.cats[2*i*nc : 2*(i+1)*nc]
		for k, f := range d.cats {
			start := len(pp.arena)
			pp.arena = d.appendField(pp.arena, r, f)
			cats[2*k], cats[2*k+1] = int32(start), int32(len(pp.arena))
		}
	}
	return read
}

// appendField appends field f's text of row r (1–13: the integer, 14–39:
// the categorical code; empty when NA), as appendRow writes it.
func (d *directRows) appendField(dst []byte, r *synthRow, f int) []byte {
	const hex = "0123456789abcdef"
	if f <= criteoDense {
		if v := r.ints[f-1]; v >= 0 {
			dst = strconv.AppendInt(dst, v, 10)
		}
		return dst
	}
	j := f - 1 - criteoDense
	if v := r.cats[j]; v >= 0 {
		c := d.g.catCode(j, v)
		for s := 28; s >= 0; s -= 4 {
			dst = append(dst, hex[(c>>uint(s))&15])
		}
	}
	return dst
}

// lineBytes is the length of the line appendRow writes for r, newline
// included.
func (d *directRows) lineBytes(r *synthRow) int64 {
	n := int64(1 + criteoDense + criteoCat + 1) // label, tabs, newline
	for _, v := range r.ints {
		if v >= 0 {
			n += int64(decimalDigits(uint64(v)))
		}
	}
	for _, v := range r.cats {
		if v >= 0 {
			n += 8
		}
	}
	return n
}

// decimalDigits is the number of decimal digits of v (1 for 0).
func decimalDigits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// run draws chunks of chunk rows from row 1 to the end on its own
// goroutine, at most directChunks ahead, and fills each (fill) and hands
// it to commit in row order on the caller's; it returns commit's first
// error (the generator is then stopped), and adds the rows' bytes to
// *read.
func (d *directRows) run(chunk int, read *int64, commit func(c *rowChunk) error) error {
	full := make(chan *rowChunk, directChunks)
	free := make(chan *rowChunk, directChunks+1)
	stop := make(chan struct{})
	for range directChunks + 1 {
		free <- &rowChunk{}
	}
	go func() {
		defer close(full)
		for from := int64(1); from < d.rows; from += int64(chunk) {
			var c *rowChunk
			select {
			case c = <-free:
			case <-stop:
				return
			}
			select {
			case <-stop:
				return
			default:
			}
			d.draw(c, from, min(from+int64(chunk), d.rows))
			full <- c
		}
	}()
	var err error
	for c := range full {
		if err == nil {
			*read = d.fill(c, *read)
			if err = commit(c); err != nil {
				close(stop)
			}
		}
		free <- c
	}
	return err
}

// loadDirect loads the synthetic rows of g (whose row 0 is line0, already
// drawn) as the text path would, through a directRows source; ok is false
// when the options give a schema the source does not produce (nothing is
// then loaded, and g is not to be used again).
func loadDirect(g *synth, line0 []byte, name string, o Options, rows int64) (s *Split, ok bool, err error) {
	if o, err = o.withDefaults(); err != nil {
		return nil, false, nil // the text path reports it
	}
	l := &loader{o: o, name: name, rows: rows, lr: newLineReader(bytes.NewReader(line0))}
	first, err := l.readSchema()
	if err != nil || len(l.sc.pending) > 0 {
		return nil, false, nil
	}
	buffered, bufferedLine, err := l.prepare(first)
	if err != nil {
		return nil, false, nil
	}
	if l.direct = newDirectRows(l, g, rows); l.direct == nil {
		return nil, false, nil
	}
	if err := l.stream(buffered, bufferedLine); err != nil {
		return nil, true, err
	}
	s, err = l.finish()
	return s, true, err
}
