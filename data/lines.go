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

// lineReader yields the lines of a text stream one at a time without
// allocating per line: the returned slice is valid until the next call.
// Line endings ("\n" or "\r\n") are removed. Line numbers are 1-based.
type lineReader struct {
	r    *bufio.Reader
	long []byte // holds a line longer than the reader's buffer
	line int64  // number of the line last returned
	read int64  // bytes consumed so far
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readBufferSize)}
}

// next returns the next line, or io.EOF when the stream is exhausted.
func (lr *lineReader) next() ([]byte, error) {
	s, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], s...)
		for errors.Is(err, bufio.ErrBufferFull) {
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
	lr.line++
	if n := len(s); s[n-1] == '\n' {
		s = s[:n-1]
	}
	if n := len(s); n > 0 && s[n-1] == '\r' {
		s = s[:n-1]
	}
	return s, nil
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
// written to *scratch, which the returned fields then share. Quoted fields
// spanning several lines are not supported.
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
// r's start: by seeking when r is an io.Seeker, else over r read into
// memory.
func rewindable(r io.Reader, name string) (*lineReader, func() (*lineReader, error), error) {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %w", name, err)
		}
		rs = bytes.NewReader(b)
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %s: %w", name, err)
	}
	return newLineReader(rs), func() (*lineReader, error) {
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return nil, err
		}
		return newLineReader(rs), nil
	}, nil
}
