package netrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/atomicfile"
)

// Checkpoint files. Version 3 (written) is
//
//	magic "splitguard-checkpoint/v3\n", step uint64, section count uint32,
//	per section: name (uint32 length + bytes), then chunks, each its raw
//	length uint32, its packed length uint32 and the chunk with its runs of
//	zero bytes packed (packZeros), ended by a chunk of raw length 0,
//	and a SHA-256 of everything before it,
//
// all little-endian, so that a section is streamed to the file as it is
// serialised (a save holds no copy of the model) and untouched embedding
// rows (zero Adam moments) cost almost nothing. Versions 1 (sections as
// they are) and 2 (each section packed whole) are read.
const (
	checkpointMagic   = "splitguard-checkpoint/v3\n"
	checkpointMagicV2 = "splitguard-checkpoint/v2\n"
	checkpointMagicV1 = "splitguard-checkpoint/v1\n"
)

// chunkBytes is the size of a section's chunks.
const chunkBytes = 1 << 20

// ckSection is one named part of a checkpoint, written by write.
type ckSection struct {
	name  string
	write func(w io.Writer) error
}

// bytesSection is a section holding b.
func bytesSection(name string, b []byte) ckSection {
	return ckSection{name, func(w io.Writer) error { _, err := w.Write(b); return err }}
}

// store keeps one party's checkpoints in a directory: files
// ROLE-STEP.ckpt, each streamed to a temporary file and renamed into
// place (package atomicfile), with permissions 0600 (they hold the
// party's model).
type store struct {
	dir, role string
	// keep is how many of the newest checkpoints stay (at least 2; 0 or
	// less means DefaultKeepCheckpoints).
	keep int
	// acked, when set, returns the newest step both parties are known to
	// hold: the two newest checkpoints at or below it are never pruned,
	// so that when one party's copy of the acknowledged checkpoint is
	// lost, both still hold the one before it (the fallback of
	// activeRun.checkpoint). Unset, every checkpoint counts as at or
	// below it (the passive saves a step only after the active did).
	acked func() int64
}

func (s *store) path(step int64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s-%012d.ckpt", s.role, step))
}

// chunker cuts what is written to it into chunks of at most chunkBytes,
// each written packed.
type chunker struct {
	w      io.Writer
	buf    []byte
	packed []byte
}

func (c *chunker) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), chunkBytes-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == chunkBytes {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (c *chunker) flush() error {
	c.packed = packZeros(c.packed[:0], c.buf)
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(c.buf)))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(c.packed)))
	if _, err := c.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := c.w.Write(c.packed); err != nil {
		return err
	}
	c.buf = c.buf[:0]
	return nil
}

// close writes the last chunk and the empty chunk that ends the section.
func (c *chunker) close() error {
	if len(c.buf) > 0 {
		if err := c.flush(); err != nil {
			return err
		}
	}
	return c.flush()
}

// save writes the checkpoint of step atomically and prunes old ones.
func (s *store) save(step int64, sections ...ckSection) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	path := s.path(step)
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error { return writeCheckpoint(w, step, sections) })
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return s.prune(step)
}

// prune deletes the oldest checkpoints beyond the newest s.keep, once the
// one just written (step) reads back intact (its checksum, streamed: no
// copy of the model is held); it never deletes that one, nor a checkpoint
// newer than it.
func (s *store) prune(step int64) error {
	if err := s.verify(step); err != nil {
		return err // keep everything: the new checkpoint is not good
	}
	return s.trim(step)
}

// trim deletes the checkpoints older than step that prunable lets go.
func (s *store) trim(step int64) error {
	keep := s.keep
	if keep <= 0 {
		keep = DefaultKeepCheckpoints
	}
	keep = max(keep, 2)
	steps, err := s.steps()
	if err != nil {
		return err
	}
	for _, old := range prunable(steps, step, keep, s.ackedStep()) {
		if err := os.Remove(s.path(old)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint: pruning: %w", err)
		}
	}
	return nil
}

// ackedStep is s.acked(), or the largest step without it.
func (s *store) ackedStep() int64 {
	if s.acked == nil {
		return math.MaxInt64
	}
	return s.acked()
}

// prunable returns the steps (of steps, ascending) a save of step may
// delete: all but the newest keep, the two newest at or below acked, and
// any at or after step.
func prunable(steps []int64, step int64, keep int, acked int64) []int64 {
	kept := map[int64]bool{}
	for i := len(steps) - 1; i >= 0 && i >= len(steps)-keep; i-- {
		kept[steps[i]] = true
	}
	below := 0
	for i := len(steps) - 1; i >= 0 && below < 2; i-- {
		if steps[i] <= acked {
			kept[steps[i]] = true
			below++
		}
	}
	var out []int64
	for _, st := range steps {
		if !kept[st] && st < step {
			out = append(out, st)
		}
	}
	return out
}

// intact returns the steps of the checkpoints present that verify (their
// checksum), oldest first, and logs each one that does not.
func (s *store) intact(log *slog.Logger) ([]int64, error) {
	steps, err := s.steps()
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, st := range steps {
		if err := s.verify(st); err != nil {
			log.Warn("skipping a checkpoint that does not verify", "step", st, "err", err)
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// verify reads the checkpoint of step back and checks its SHA-256.
func (s *store) verify(step int64) error {
	path := s.path(step)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if st.Size() < int64(len(checkpointMagic)+12+sha256.Size) {
		return fmt.Errorf("checkpoint %s: too short", path)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, st.Size()-sha256.Size); err != nil {
		return fmt.Errorf("checkpoint %s: reading back: %w", path, err)
	}
	var sum [sha256.Size]byte
	if _, err := io.ReadFull(f, sum[:]); err != nil {
		return fmt.Errorf("checkpoint %s: reading back: %w", path, err)
	}
	if !bytes.Equal(h.Sum(nil), sum[:]) {
		return fmt.Errorf("checkpoint %s: reads back with a checksum mismatch", path)
	}
	return nil
}

// writeCheckpoint writes the checkpoint of step with sections to w.
func writeCheckpoint(w io.Writer, step int64, sections []ckSection) error {
	h := sha256.New()
	mw := io.MultiWriter(w, h)
	le := binary.LittleEndian
	hdr := []byte(checkpointMagic)
	hdr = le.AppendUint64(hdr, uint64(step))
	hdr = le.AppendUint32(hdr, uint32(len(sections)))
	if _, err := mw.Write(hdr); err != nil {
		return err
	}
	c := &chunker{w: mw, buf: make([]byte, 0, chunkBytes)}
	for _, sec := range sections {
		name := le.AppendUint32(nil, uint32(len(sec.name)))
		if _, err := mw.Write(append(name, sec.name...)); err != nil {
			return err
		}
		if err := sec.write(c); err != nil {
			return fmt.Errorf("section %s: %w", sec.name, err)
		}
		if err := c.close(); err != nil {
			return err
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// steps lists the steps of the checkpoints present, oldest first.
func (s *store) steps() ([]int64, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []int64
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), s.role+"-")
		if !ok {
			continue
		}
		name, ok = strings.CutSuffix(name, ".ckpt")
		if !ok {
			continue
		}
		if st, err := strconv.ParseInt(name, 10, 64); err == nil && st >= 0 {
			out = append(out, st)
		}
	}
	slices.Sort(out)
	return out, nil
}

// has reports whether a checkpoint of step is present.
func (s *store) has(step int64) bool {
	_, err := os.Stat(s.path(step))
	return err == nil
}

// load reads and checks the checkpoint of step.
func (s *store) load(step int64) (map[string][]byte, error) {
	path := s.path(step)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	secs, err := parseCheckpoint(b, step)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return secs, nil
}

// parseCheckpoint checks and splits the bytes of the checkpoint of step.
// Sections alias b where they can (version 1), else are copies.
func parseCheckpoint(b []byte, step int64) (map[string][]byte, error) {
	version := 0
	for v, magic := range []string{checkpointMagicV1, checkpointMagicV2, checkpointMagic} {
		if bytes.HasPrefix(b, []byte(magic)) {
			version = v + 1
		}
	}
	if len(b) < len(checkpointMagic)+12+sha256.Size || version == 0 {
		return nil, errors.New("not a splitguard checkpoint")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch (corrupted or truncated)")
	}
	body = body[len(checkpointMagic):]
	le := binary.LittleEndian
	if got := le.Uint64(body); got != uint64(step) {
		return nil, fmt.Errorf("holds step %d", int64(got))
	}
	n := le.Uint32(body[8:])
	body = body[12:]
	out := map[string][]byte{}
	for range n {
		if len(body) < 4 {
			return nil, errors.New("truncated section header")
		}
		l := uint64(le.Uint32(body))
		if uint64(len(body)-4) < l {
			return nil, errors.New("truncated section name")
		}
		name := string(body[4 : 4+l])
		body = body[4+l:]
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("section %q twice", name)
		}
		var data []byte
		var err error
		switch version {
		case 1, 2:
			data, body, err = parseWholeSection(body, version == 2)
		default:
			data, body, err = parseChunks(body)
		}
		if err != nil {
			return nil, fmt.Errorf("section %q: %w", name, err)
		}
		out[name] = data
	}
	if len(body) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// parseWholeSection reads a section of version 1 (its length, then the
// bytes) or 2 (its length, the packed length, then the packed bytes) and
// returns it and what follows.
func parseWholeSection(body []byte, packed bool) (data, rest []byte, err error) {
	le := binary.LittleEndian
	if len(body) < 8 {
		return nil, nil, errors.New("truncated length")
	}
	m := le.Uint64(body)
	body = body[8:]
	if !packed {
		if m > uint64(len(body)) {
			return nil, nil, errors.New("overruns the file")
		}
		return body[:m], body[m:], nil
	}
	if len(body) < 8 {
		return nil, nil, errors.New("truncated packed length")
	}
	pl := le.Uint64(body)
	body = body[8:]
	if pl > uint64(len(body)) {
		return nil, nil, errors.New("overruns the file")
	}
	data, err = unpackZeros(body[:pl], m)
	return data, body[pl:], err
}

// parseChunks reads the chunks of a version 3 section and returns the
// section and what follows.
func parseChunks(body []byte) (data, rest []byte, err error) {
	le := binary.LittleEndian
	for {
		if len(body) < 8 {
			return nil, nil, errors.New("truncated chunk header")
		}
		raw, pl := uint64(le.Uint32(body)), uint64(le.Uint32(body[4:]))
		body = body[8:]
		if pl > uint64(len(body)) || raw > chunkBytes {
			return nil, nil, errors.New("chunk overruns the file")
		}
		if raw == 0 {
			if pl != 0 {
				return nil, nil, errors.New("empty chunk with packed bytes")
			}
			return data, body, nil
		}
		chunk, err := unpackZeros(body[:pl], raw)
		if err != nil {
			return nil, nil, err
		}
		data = append(data, chunk...)
		body = body[pl:]
	}
}

// minZeroRun is the shortest run of zero bytes packZeros encodes as a run.
const minZeroRun = 8

// packZeros appends src to dst with its runs of zero bytes encoded: a
// sequence of (uvarint literal length, the literal bytes, uvarint length
// of the zero run that follows). The Adam moments of embedding rows no
// batch has touched are zero, so a checkpoint's size follows the rows
// touched rather than the table size: an untouched row of dimension 4
// costs its 16 bytes of weights and a few bytes of lengths instead of 64.
func packZeros(dst, src []byte) []byte {
	var run [minZeroRun]byte
	for len(src) > 0 {
		z := bytes.Index(src, run[:])
		if z < 0 {
			z = len(src)
		}
		dst = binary.AppendUvarint(dst, uint64(z))
		dst = append(dst, src[:z]...)
		src = src[z:]
		n := 0
		for n < len(src) && src[n] == 0 {
			n++
		}
		dst = binary.AppendUvarint(dst, uint64(n))
		src = src[n:]
	}
	return dst
}

// unpackZeros decodes what packZeros wrote, which must expand to exactly
// size bytes. The output grows with what is decoded, so a forged size
// allocates nothing up front.
func unpackZeros(p []byte, size uint64) ([]byte, error) {
	var zero [64 << 10]byte
	out := make([]byte, 0, min(size, 64<<20))
	for len(p) > 0 {
		lit, k := binary.Uvarint(p)
		if k <= 0 || lit > uint64(len(p)-k) || lit > size-uint64(len(out)) {
			return nil, errors.New("bad literal length")
		}
		out = append(out, p[k:k+int(lit)]...)
		p = p[k+int(lit):]
		zeros, k := binary.Uvarint(p)
		if k <= 0 || zeros > size-uint64(len(out)) {
			return nil, errors.New("bad zero-run length")
		}
		for zeros > 0 {
			n := min(zeros, uint64(len(zero)))
			out = append(out, zero[:n]...)
			zeros -= n
		}
		p = p[k:]
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("unpacks to %d bytes, want %d", len(out), size)
	}
	return out, nil
}

// ackedPath is the file holding the newest checkpoint step both parties
// are known to hold.
func (s *store) ackedPath() string { return filepath.Join(s.dir, s.role+".acked") }

// readAcked returns the step in ackedPath (0 when there is none).
func (s *store) readAcked() (int64, error) {
	b, err := os.ReadFile(s.ackedPath())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("checkpoint: %s: %q is not a step", s.ackedPath(), bytes.TrimSpace(b))
	}
	return v, nil
}

// writeAcked records step in ackedPath.
func (s *store) writeAcked(step int64) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := atomicfile.WriteFile(s.ackedPath(), []byte(strconv.FormatInt(step, 10)+"\n"), 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// cleanOrphans removes the temporary files that interrupted writes left
// in the run's directories (atomicfile's, and the checkpoint temporaries
// of earlier versions, named .ROLE-STEP.ckpt.*), logging each.
func cleanOrphans(log *slog.Logger, dirs ...string) error {
	for _, dir := range dirs {
		removed, err := atomicfile.CleanTemps(dir)
		if err != nil {
			return err
		}
		old, _ := filepath.Glob(filepath.Join(dir, ".*-*.ckpt.*"))
		for _, p := range old {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			removed = append(removed, p)
		}
		for _, p := range removed {
			log.Info("removed a temporary file an interrupted write left", "file", p)
		}
	}
	return nil
}
