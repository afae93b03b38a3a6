package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// readBufferSize is the size of the buffered reader used for every table:
// large enough that a typical line never straddles two fills.
const readBufferSize = 1 << 20

// MaxRecordBytes is the most bytes one record of a table may hold (its
// line ending excluded; a record spans several lines only when a quoted
// field holds a line break). A longer record is refused with an error
// naming its first line, after reading at most this many bytes of it.
const MaxRecordBytes = 1 << 20

// lineReader yields the records of a text stream one at a time without
// allocating per record: the returned slice is valid until the next call.
// A record is one line, or several when a quoted field (RFC 4180) holds a
// line break: the lines are then joined with "\n" (a "\r\n" inside the
// field becomes "\n", as encoding/csv does). Record endings ("\n" or
// "\r\n") are removed. Line numbers are 1-based.
type lineReader struct {
	r    *bufio.Reader
	long []byte // holds a line longer than the reader's buffer
	rec  []byte // holds a record of several lines
	line int64  // number of the first line of the record last returned
	phys int64  // number of the last line read
	read int64  // bytes consumed so far
	// delim is the field delimiter, which decides where a quoted field
	// may open; 0 (before it is known) stands for both ',' and '\t'.
	delim byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readBufferSize)}
}

// next returns the next record, or io.EOF when the stream is exhausted.
// A record of more than MaxRecordBytes is an error naming its first line.
func (lr *lineReader) next() ([]byte, error) {
	s, err := lr.physical(0)
	if err != nil {
		return nil, err
	}
	lr.line = lr.phys
	if bytes.IndexByte(s, '"') < 0 || !lr.endsQuoted(s, false) {
		return s, nil
	}
	// A quoted field holds a line break: join the lines up to the one
	// that closes it (or the end of the stream, which leaves the field
	// unterminated for splitFields to report).
	lr.rec = append(lr.rec[:0], s...)
	for {
		s, err = lr.physical(len(lr.rec) + 1)
		if err == io.EOF {
			return lr.rec, nil
		}
		if err != nil {
			return nil, err
		}
		lr.rec = append(append(lr.rec, '\n'), s...)
		if !lr.endsQuoted(s, true) {
			return lr.rec, nil
		}
	}
}

// recordTooLong is the error for a record longer than MaxRecordBytes.
func (lr *lineReader) recordTooLong() error {
	if lr.phys > lr.line && lr.line > 0 {
		return fmt.Errorf("line %d: the record starting there (a quoted field opened on it is still open on line %d) is longer than %d bytes, the most one record may hold",
			lr.line, lr.phys, MaxRecordBytes)
	}
	return fmt.Errorf("line %d is longer than %d bytes, the most one record may hold", lr.phys, MaxRecordBytes)
}

// physical reads the next line, its ending removed, or returns io.EOF. held
// is how many bytes of the current record came before it: a line taking the
// record past MaxRecordBytes is an error, and is not read further.
func (lr *lineReader) physical(held int) ([]byte, error) {
	s, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], s...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if held+len(lr.long) > MaxRecordBytes+2 {
				if held == 0 {
					lr.line = lr.phys + 1
				}
				lr.phys++
				return nil, lr.recordTooLong()
			}
			s, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, s...)
		}
		s = lr.long
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(s) == 0 {
		return nil, io.EOF
	}
	lr.read += int64(len(s))
	lr.phys++
	if n := len(s); s[n-1] == '\n' {
		s = s[:n-1]
	}
	if n := len(s); n > 0 && s[n-1] == '\r' {
		s = s[:n-1]
	}
	if held+len(s) > MaxRecordBytes {
		if held == 0 {
			lr.line = lr.phys
		}
		return nil, lr.recordTooLong()
	}
	return s, nil
}

// endsQuoted reports whether a record whose line s was read ends inside a
// quoted field, given whether s starts inside one. A quote opens a field
// only at its start; inside, "" is a quote and a lone quote closes it. A
// quote elsewhere is left for splitFields to refuse.
func (lr *lineReader) endsQuoted(s []byte, in bool) bool {
	start := !in // at the start of a field
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in:
			if c == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					i++
				} else {
					in = false
				}
			}
		case c == '"' && start:
			in = true
			start = false
		default:
			start = c == lr.delim || (lr.delim == 0 && (c == ',' || c == '\t'))
		}
	}
	return in
}

// openTable opens path for reading, transparently decompressing a ".gz"
// file. The returned closer closes everything opened.
func openTable(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, f.Close, nil
	}
	z, err := gzip.NewReader(bufio.NewReaderSize(f, readBufferSize))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return z, func() error { z.Close(); return f.Close() }, nil
}

// splitFields splits line at delim into dst (reused) and returns it. A
// line without a double quote is split in place. Otherwise fields are
// parsed as RFC 4180 quoted fields ("" inside quotes is one quote) and
// written to *scratch, which the returned fields then share. A quoted
// field may hold line breaks: the lineReader joins its lines into one
// record.
func splitFields(line []byte, delim byte, dst [][]byte, scratch *[]byte) ([][]byte, error) {
	dst = dst[:0]
	if bytes.IndexByte(line, '"') < 0 {
		for {
			i := bytes.IndexByte(line, delim)
			if i < 0 {
				return append(dst, line), nil
			}
			dst = append(dst, line[:i])
			line = line[i+1:]
		}
	}
	// Quoted path: the output is never longer than the input, so the
	// scratch buffer is sized once and the fields can alias it safely.
	if cap(*scratch) < len(line) {
		*scratch = make([]byte, 0, len(line))
	}
	out := (*scratch)[:0]
	i := 0
	for {
		start := len(out)
		if i < len(line) && line[i] == '"' {
			i++
			for {
				if i >= len(line) {
					return dst, errors.New("unterminated quoted field")
				}
				c := line[i]
				i++
				if c == '"' {
					if i < len(line) && line[i] == '"' {
						out = append(out, '"')
						i++
						continue
					}
					break
				}
				out = append(out, c)
			}
			if i < len(line) && line[i] != delim {
				return dst, fmt.Errorf("unexpected %q after a closing quote", line[i])
			}
		} else {
			for i < len(line) && line[i] != delim {
				if line[i] == '"' {
					return dst, errors.New("quote inside an unquoted field")
				}
				out = append(out, line[i])
				i++
			}
		}
		dst = append(dst, out[start:len(out):len(out)])
		if i >= len(line) {
			*scratch = out
			return dst, nil
		}
		i++ // the delimiter
	}
}

// parseNumber parses a decimal number: an optionally signed integer of at
// most 18 digits without allocation, anything else through
// strconv.ParseFloat. NaN and ±Inf are rejected.
func parseNumber(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	d := b
	if d[0] == '-' || d[0] == '+' {
		neg = d[0] == '-'
		d = d[1:]
	}
	if len(d) > 0 && len(d) <= 18 {
		var v int64
		i := 0
		for ; i < len(d); i++ {
			c := d[i] - '0'
			if c > 9 {
				break
			}
			v = v*10 + int64(c)
		}
		if i == len(d) {
			if neg {
				v = -v
			}
			return float64(v), true
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// parseUint64 parses an unsigned decimal integer of up to 20 digits
// (Avazu's ids exceed the int64 range) without allocation.
func parseUint64(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		c -= '0'
		if c > 9 {
			return 0, false
		}
		if v > math.MaxUint64/10 || v*10 > math.MaxUint64-uint64(c) {
			return 0, false // overflow
		}
		v = v*10 + uint64(c)
	}
	return v, true
}

// source is an opened table that can be read again from its start.
type source struct {
	r      io.Reader
	closer func() error
	path   string
}

// openSource opens the table at path for [Load].
func openSource(path string) (*source, error) {
	r, closeFn, err := openTable(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	return &source{r: r, closer: closeFn, path: path}, nil
}

// rewind closes the table and opens it again at its start.
func (s *source) rewind() (*lineReader, error) {
	if err := s.closer(); err != nil {
		return nil, err
	}
	r, closeFn, err := openTable(s.path)
	if err != nil {
		s.closer = func() error { return nil }
		return nil, err
	}
	s.r, s.closer = r, closeFn
	return newLineReader(r), nil
}

func (s *source) close() error { return s.closer() }

// rewindable returns a line reader over r and a function restarting it at
// r's start: by seeking when r is an io.Seeker, else over the bytes read
// from r so far, kept in memory as they are read, followed by the rest of
// r. forget, for a reader that is not a seeker, stops keeping its bytes
// and drops those kept: rewind then fails.
func rewindable(r io.Reader, name string) (lr *lineReader, rewind func() (*lineReader, error), forget func(), err error) {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		rec := &recorder{r: r}
		return newLineReader(rec), func() (*lineReader, error) {
			if rec.off {
				return nil, errors.New("the table cannot be read again")
			}
			return newLineReader(io.MultiReader(bytes.NewReader(rec.buf.Bytes()), rec)), nil
		}, rec.forget, nil
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("data: %s: %w", name, err)
	}
	return newLineReader(rs), func() (*lineReader, error) {
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return nil, err
		}
		return newLineReader(rs), nil
	}, func() {}, nil
}

// recorder reads r and keeps a copy of what it read (never sliding or
// changing the bytes already kept, which earlier rewinds read).
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
	off bool // nothing more is kept
}

func (rc *recorder) Read(p []byte) (int, error) {
	n, err := rc.r.Read(p)
	if !rc.off {
		rc.buf.Write(p[:n])
	}
	return n, err
}

func (rc *recorder) forget() { rc.off, rc.buf = true, bytes.Buffer{} }
