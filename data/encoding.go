package data

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/atomicfile"
)

// Encoding is how a party's feature columns are encoded: the columns in
// the order of Features (categorical and dense columns each keep this
// order), and per column what [Load] learnt from the training split. A
// model only makes sense on features encoded the same way, so a trained
// model is applied to a new file with [LoadWith] and the training data's
// Encoding (Split.Encoding, saved with [SaveEncoding]).
type Encoding struct {
	// Format is the table format (a registered one: [TableFormats]).
	Format string
	// IDCol names the example-ID column, or is empty when IDs are row
	// numbers.
	IDCol string
	// LabelCol names the label column, or is empty when no labels were
	// loaded (the passive party); Positive and Negative are the label
	// values of Options.
	LabelCol           string
	Positive, Negative []string
	// MinCount is the minimum training count of a vocabulary value (0 or 1:
	// every value seen in the training split); it is recorded, the
	// vocabularies already reflect it.
	MinCount int
	// Columns are the feature columns in order.
	Columns []ColumnEncoding
}

// ColumnEncoding is the encoding of one feature column.
type ColumnEncoding struct {
	Name string
	// Kind is KindCategorical or KindDense.
	Kind ColumnKind

	// Buckets > 0 (categorical, hashing mode): a value's id is its salted
	// FNV-1a hash modulo Buckets.
	Buckets int
	// Vocab (categorical, vocabulary mode: Buckets == 0) lists the values
	// in id order: Vocab[i] has id i+1. Any other value, a value never
	// seen in training, has id 0, the out-of-vocabulary id. The empty
	// value (NA) is a value like any other.
	Vocab []string

	// Min and Max (dense) are the training split's minimum and maximum
	// after, with Log, x ↦ sign(x)·ln(1+|x|); a value v is encoded as
	// (v−Min)/(Max−Min) clipped to [0, 1], or 0 when Max = Min. Missing
	// is the value a missing cell ([IsMissing]) takes before scaling: 0
	// for Criteo and Avazu (included in Min and Max), the training mean
	// of the column for a generic CSV.
	Min, Max, Missing float64
	Log               bool
}

// Cardinality is the number of ids of a categorical column: Buckets, or
// len(Vocab)+1 (the out-of-vocabulary id 0 included).
func (c *ColumnEncoding) Cardinality() int {
	if c.Buckets > 0 {
		return c.Buckets
	}
	return len(c.Vocab) + 1
}

// Validate checks that e can encode a file: known format, at least one
// column, unique column names, and per column a valid kind, a bucket
// count or vocabulary within the int32 id range, no duplicate vocabulary
// value, and a finite dense range with Min ≤ Max.
func (e *Encoding) Validate() error {
	if _, ok := LookupTableFormat(e.Format); !ok {
		return fmt.Errorf("encoding: unknown format %q", e.Format)
	}
	if len(e.Columns) == 0 {
		return errors.New("encoding: no feature columns")
	}
	seen := make(map[string]int, len(e.Columns))
	for i, c := range e.Columns {
		where := fmt.Sprintf("encoding: column %d (%q)", i+1, c.Name)
		if c.Name == "" {
			return fmt.Errorf("encoding: column %d has no name", i+1)
		}
		if j, dup := seen[c.Name]; dup {
			return fmt.Errorf("encoding: column %q appears twice (columns %d and %d)", c.Name, j+1, i+1)
		}
		seen[c.Name] = i
		if c.Name == e.IDCol || (c.Name == e.LabelCol && e.LabelCol != "") {
			return fmt.Errorf("%s is also the ID or label column", where)
		}
		switch c.Kind {
		case KindCategorical:
			switch {
			case c.Buckets < 0 || c.Buckets > math.MaxInt32:
				return fmt.Errorf("%s: bucket count %d outside [1, %d]", where, c.Buckets, math.MaxInt32)
			case c.Buckets > 0 && len(c.Vocab) > 0:
				return fmt.Errorf("%s: both %d hash buckets and a vocabulary of %d values", where, c.Buckets, len(c.Vocab))
			case len(c.Vocab) >= math.MaxInt32:
				return fmt.Errorf("%s: vocabulary of %d values exceeds the int32 id range", where, len(c.Vocab))
			}
		case KindDense:
			if math.IsNaN(c.Min) || math.IsInf(c.Min, 0) || math.IsNaN(c.Max) || math.IsInf(c.Max, 0) || c.Min > c.Max {
				return fmt.Errorf("%s: dense range [%v, %v] is not a finite interval", where, c.Min, c.Max)
			}
			if math.IsNaN(c.Missing) || math.IsInf(c.Missing, 0) {
				return fmt.Errorf("%s: missing-value substitute %v is not finite", where, c.Missing)
			}
			if c.Buckets != 0 || len(c.Vocab) != 0 {
				return fmt.Errorf("%s: a dense column with hash buckets or a vocabulary", where)
			}
		default:
			return fmt.Errorf("%s: kind %s, want categorical or dense", where, c.Kind)
		}
	}
	return nil
}

// vocabIndex maps a vocabulary column's values to their ids, refusing a
// duplicate value.
func (c *ColumnEncoding) vocabIndex() (map[string]int32, error) {
	m := make(map[string]int32, len(c.Vocab))
	for i, v := range c.Vocab {
		if j, dup := m[v]; dup {
			return nil, fmt.Errorf("encoding: column %q: value %q has ids %d and %d", c.Name, v, j, i+1)
		}
		m[v] = int32(i + 1)
	}
	return m, nil
}

// Encoding file format. The first line is a JSON object (the header:
// everything but the vocabulary values, so `head -1 FILE` shows the
// columns, ranges and vocabulary sizes); then, for every vocabulary column
// in column order, its values in id order, each as a uvarint byte length
// and the bytes; then the CRC-32C (Castagnoli, little-endian uint32) of
// everything before it. Values are raw bytes: a category need not be
// valid UTF-8, which JSON strings could not carry losslessly, and a value
// costs its length plus one byte (Criteo's 8-hex-digit categories: 9
// bytes), so the millions of values of a full Criteo vocabulary take tens
// of megabytes rather than the hundreds a JSON array would, and are
// written and read as a stream.
const (
	encodingVersion = 1
	// maxValueLen bounds one vocabulary value in a file (a sanity limit
	// against a corrupt length).
	maxValueLen = 1 << 24
	// maxHeaderLen bounds the header line.
	maxHeaderLen = 1 << 26
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type encodingHeader struct {
	Version  int            `json:"splitguard_encoding"`
	Format   string         `json:"format"`
	IDCol    string         `json:"id_col,omitempty"`
	LabelCol string         `json:"label_col,omitempty"`
	Positive labelValues    `json:"positive,omitempty"`
	Negative labelValues    `json:"negative,omitempty"`
	MinCount int            `json:"min_count,omitempty"`
	Columns  []headerColumn `json:"columns"`
}

type headerColumn struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Buckets    int      `json:"buckets,omitempty"`
	Vocabulary *int     `json:"vocabulary,omitempty"` // number of values in the binary part
	Min        *float64 `json:"min,omitempty"`
	Max        *float64 `json:"max,omitempty"`
	Log        bool     `json:"log,omitempty"`
	Missing    float64  `json:"missing,omitempty"`
}

// labelValues is a list of label values in the encoding header; a single
// string (the form of files written before lists) reads as one value.
type labelValues []string

// UnmarshalJSON reads a list of strings or one string.
func (v *labelValues) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*v = nil
		if one != "" {
			*v = labelValues{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*v = many
	return nil
}

// WriteTo writes e in the encoding file format (see [SaveEncoding]).
func (e *Encoding) WriteTo(w io.Writer) (int64, error) {
	if err := e.Validate(); err != nil {
		return 0, err
	}
	h := encodingHeader{Version: encodingVersion, Format: e.Format, IDCol: e.IDCol, LabelCol: e.LabelCol,
		Positive: e.Positive, Negative: e.Negative, MinCount: e.MinCount}
	for _, c := range e.Columns {
		hc := headerColumn{Name: c.Name, Kind: c.Kind.String()}
		switch c.Kind {
		case KindCategorical:
			if c.Buckets > 0 {
				hc.Buckets = c.Buckets
			} else {
				n := len(c.Vocab)
				hc.Vocabulary = &n
			}
		case KindDense:
			lo, hi := c.Min, c.Max
			hc.Min, hc.Max, hc.Log, hc.Missing = &lo, &hi, c.Log, c.Missing
		}
		h.Columns = append(h.Columns, hc)
	}
	head, err := json.Marshal(h)
	if err != nil {
		return 0, fmt.Errorf("encoding: %w", err)
	}
	cw := &crcWriter{w: bufio.NewWriterSize(w, 1<<20), crc: crc32.New(crcTable)}
	cw.write(append(head, '\n'))
	var buf []byte
	for _, c := range e.Columns {
		if c.Kind != KindCategorical || c.Buckets > 0 {
			continue
		}
		for _, v := range c.Vocab {
			buf = binary.AppendUvarint(buf[:0], uint64(len(v)))
			cw.write(append(buf, v...))
		}
	}
	sum := binary.LittleEndian.AppendUint32(nil, cw.crc.Sum32())
	cw.write(sum)
	if cw.err == nil {
		cw.err = cw.w.Flush()
	}
	return cw.n, cw.err
}

// crcWriter writes through a buffer, summing what it writes and keeping
// the first error.
type crcWriter struct {
	w   *bufio.Writer
	crc interface {
		io.Writer
		Sum32() uint32
	}
	n   int64
	err error
}

func (c *crcWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	c.crc.Write(b)
	var n int
	n, c.err = c.w.Write(b)
	c.n += int64(n)
}

// ReadEncoding reads an encoding written by [Encoding.WriteTo]; name is
// used in errors. A truncated or corrupt file, a version other than 1
// and an encoding that fails [Encoding.Validate] are errors.
func ReadEncoding(r io.Reader, name string) (*Encoding, error) {
	br := &crcReader{r: bufio.NewReaderSize(r, 1<<20)}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("encoding %s: %s", name, fmt.Sprintf(format, a...))
	}
	var head []byte
	for {
		part, err := br.r.ReadSlice('\n')
		head = append(head, part...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, fail("no header line: %v", noEOF(err))
		}
		if len(head) > maxHeaderLen {
			return nil, fail("header line longer than %d bytes", maxHeaderLen)
		}
	}
	br.sum = crc32.Update(0, crcTable, head)
	var h encodingHeader
	if err := json.Unmarshal(head, &h); err != nil {
		return nil, fail("header: %v (is it an encoding file?)", err)
	}
	if h.Version != encodingVersion {
		return nil, fail("version %d, want %d", h.Version, encodingVersion)
	}
	e := &Encoding{Format: h.Format, IDCol: h.IDCol, LabelCol: h.LabelCol, Positive: h.Positive, Negative: h.Negative, MinCount: h.MinCount}
	for i, hc := range h.Columns {
		c := ColumnEncoding{Name: hc.Name, Buckets: hc.Buckets, Log: hc.Log, Missing: hc.Missing}
		switch hc.Kind {
		case "categorical":
			c.Kind = KindCategorical
			if hc.Vocabulary != nil {
				n := *hc.Vocabulary
				if n < 0 || n >= math.MaxInt32 {
					return nil, fail("column %q: vocabulary size %d", hc.Name, n)
				}
				c.Vocab = make([]string, 0, min(n, 1<<20))
				for k := range n {
					l, err := binary.ReadUvarint(br)
					if err != nil {
						return nil, fail("column %q: value %d of %d: %v", hc.Name, k+1, n, noEOF(err))
					}
					if l > maxValueLen {
						return nil, fail("column %q: value %d of %d is %d bytes long (corrupt file?)", hc.Name, k+1, n, l)
					}
					v := make([]byte, l)
					if _, err := io.ReadFull(br, v); err != nil {
						return nil, fail("column %q: value %d of %d: %v", hc.Name, k+1, n, noEOF(err))
					}
					c.Vocab = append(c.Vocab, string(v))
				}
			} else if hc.Buckets <= 0 {
				return nil, fail("column %q: categorical without buckets or vocabulary", hc.Name)
			}
		case "dense":
			c.Kind = KindDense
			if hc.Min == nil || hc.Max == nil {
				return nil, fail("column %q: dense without min and max", hc.Name)
			}
			c.Min, c.Max = *hc.Min, *hc.Max
		default:
			return nil, fail("column %d (%q): kind %q, want categorical or dense", i+1, hc.Name, hc.Kind)
		}
		e.Columns = append(e.Columns, c)
	}
	sum := br.sum
	var tail [4]byte
	if _, err := io.ReadFull(br.r, tail[:]); err != nil {
		return nil, fail("checksum: %v", noEOF(err))
	}
	if got := binary.LittleEndian.Uint32(tail[:]); got != sum {
		return nil, fail("checksum %08x, the contents give %08x (corrupt file)", got, sum)
	}
	if _, err := br.r.ReadByte(); err != io.EOF {
		return nil, fail("data after the checksum")
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return e, nil
}

// crcReader reads from a buffered reader, summing (CRC-32C) the bytes it
// hands out.
type crcReader struct {
	r   *bufio.Reader
	sum uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sum = crc32.Update(c.sum, crcTable, p[:n])
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.sum = crc32.Update(c.sum, crcTable, []byte{b})
	}
	return b, err
}

// noEOF reports an unexpected end of file as such.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// SaveEncoding writes e to path atomically: to a temporary file in the
// same directory, synced, then renamed, so readers see either no file (or
// the old one) or the whole new one. The file is readable by its owner
// only (0600): a vocabulary lists the party's feature values.
func SaveEncoding(path string, e *Encoding) error {
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		_, err := e.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	return nil
}

// LoadEncoding reads the encoding file at path (see [SaveEncoding]).
func LoadEncoding(path string) (*Encoding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	defer f.Close()
	return ReadEncoding(f, path)
}

// options returns the Options LoadWith reads a file with: o's sampling,
// split, ID and bad-row settings and e's format, label and columns. An
// option of o that e determines must be unset or agree with e; otherwise
// the error names it.
func (e *Encoding) options(o Options) (Options, error) {
	raw := o
	o, err := o.withDefaults()
	if err != nil {
		return o, err
	}
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if f := strings.ToLower(strings.TrimSpace(raw.Format)); f != "" && f != e.Format {
		bad("format %q, the encoding's is %q", o.Format, e.Format)
	}
	if !o.NoLabel {
		if o.LabelCol != "" && o.LabelCol != e.LabelCol {
			bad("label column %q, the encoding's is %q", o.LabelCol, e.LabelCol)
		}
		if len(o.Positive) > 0 && !slices.Equal(o.Positive, e.Positive) {
			bad("positive labels %q, the encoding's are %q", o.Positive, e.Positive)
		}
		if len(o.Negative) > 0 && !slices.Equal(o.Negative, e.Negative) {
			bad("negative labels %q, the encoding's are %q", o.Negative, e.Negative)
		}
	}
	if o.IDCol != "" && o.IDCol != e.IDCol {
		bad("ID column %q, the encoding's is %q", o.IDCol, e.IDCol)
	}
	if o.MinCount != 0 && max(o.MinCount, 1) != max(e.MinCount, 1) {
		bad("minimum count %d, the encoding's is %d", o.MinCount, e.MinCount)
	}
	names := make(map[string]ColumnKind, len(e.Columns))
	for _, c := range e.Columns {
		names[c.Name] = c.Kind
		switch {
		case c.Kind == KindCategorical && o.HashBuckets > 0 && c.Buckets != o.HashBuckets:
			bad("%d hash buckets, the encoding's column %q has %s", o.HashBuckets, c.Name, c.describe())
		case c.Kind == KindDense && o.LogDense && !c.Log:
			bad("log-scaled dense values, the encoding's column %q is not log-scaled", c.Name)
		}
	}
	if o.Columns != nil {
		want := make([]string, 0, len(e.Columns))
		for _, c := range e.Columns {
			want = append(want, c.Name)
		}
		got := slices.Clone(o.Columns)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(slices.Compact(got), want) {
			bad("columns %v, the encoding's are %v", o.Columns, want)
		}
	}
	for _, kc := range []struct {
		kind  ColumnKind
		names []string
	}{{KindDense, o.Dense}, {KindCategorical, o.Categorical}, {KindIgnored, o.Ignore}} {
		for _, n := range kc.names {
			switch k, ok := names[n]; {
			case kc.kind == KindIgnored && ok:
				bad("column %q declared ignored is a feature of the encoding", n)
			case kc.kind == KindIgnored:
			case !ok:
				bad("column %q declared %s is not in the encoding", n, kc.kind)
			case k != kc.kind:
				bad("column %q declared %s, the encoding's is %s", n, kc.kind, k)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("data: options disagree with the encoding: %w", err)
	}
	return Options{
		Format: e.Format, LabelCol: e.LabelCol, Positive: e.Positive, Negative: e.Negative,
		NoLabel: o.NoLabel || e.LabelCol == "", IDCol: e.IDCol, DetectRows: raw.DetectRows,
		Sample: raw.Sample, TestFrac: raw.TestFrac, Seed: o.Seed, SkipBadRows: o.SkipBadRows,
	}, nil
}

// describe names how a categorical column is encoded.
func (c *ColumnEncoding) describe() string {
	if c.Buckets > 0 {
		return fmt.Sprintf("%d hash buckets", c.Buckets)
	}
	return fmt.Sprintf("a vocabulary of %d values", len(c.Vocab))
}
