package netrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
//	per section: name (uint32 length + bytes), then chunks (uint32 length
//	+ bytes) ended by an empty chunk,
//	and a SHA-256 of everything before it,
//
// all little-endian, so that a section is streamed to the file as it is
// serialised (a save holds no copy of the model). Version 1 (read only)
// had one uint64 length per section instead of chunks; version 2 (sections
// with runs of zero bytes packed, written from one buffer) is not read here.
const (
	checkpointMagic   = "splitguard-checkpoint/v3\n"
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
	// keep is how many of the newest checkpoints stay (key
	// keep_checkpoints; 0 means DefaultKeepCheckpoints, and never fewer
	// than 2: the active party checkpoints before the passive, so the last
	// checkpoint both hold is the active's newest or the one before).
	keep int
}

func (s *store) path(step int64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s-%012d.ckpt", s.role, step))
}

// chunker cuts what is written to it into chunks of at most chunkBytes.
type chunker struct {
	w   io.Writer
	buf []byte
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
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(c.buf)))
	if _, err := c.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := c.w.Write(c.buf); err != nil {
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

// prune deletes the oldest checkpoints beyond the newest s.keep once the
// one just written (step) verifies; it never deletes that one, one newer
// than it, nor the checkpoint both parties acknowledged.
func (s *store) prune(step int64) error {
	if err := verifyCheckpoint(s.path(step)); err != nil {
		return fmt.Errorf("checkpoint %s does not read back, keeping the older ones: %w", s.path(step), err)
	}
	keep := s.keep
	if keep <= 0 {
		keep = DefaultKeepCheckpoints
	}
	keep = max(keep, 2)
	acked, err := s.readAcked()
	if err != nil {
		return err
	}
	steps, err := s.steps()
	if err != nil {
		return err
	}
	for len(steps) > keep {
		if old := steps[0]; old < step && old != acked {
			if err := os.Remove(s.path(old)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("checkpoint: %w", err)
			}
		}
		steps = steps[1:]
	}
	return nil
}

// verifyCheckpoint checks the SHA-256 at the end of the checkpoint file at
// path against its contents, reading it as a stream (a save is not
// followed by a second copy of the model in memory).
func verifyCheckpoint(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	n := fi.Size() - sha256.Size
	if n < int64(len(checkpointMagic)) {
		return errors.New("too short for a checkpoint")
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, n)); err != nil {
		return err
	}
	var sum [sha256.Size]byte
	if _, err := io.ReadFull(f, sum[:]); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), sum[:]) {
		return errors.New("checksum mismatch")
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
	v3 := bytes.HasPrefix(b, []byte(checkpointMagic))
	if len(b) < len(checkpointMagic)+12+sha256.Size || !(v3 || bytes.HasPrefix(b, []byte(checkpointMagicV1))) {
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
		if !v3 {
			if len(body) < 8 {
				return nil, fmt.Errorf("section %q: truncated length", name)
			}
			m := le.Uint64(body)
			if m > uint64(len(body)-8) {
				return nil, fmt.Errorf("section %q overruns the file", name)
			}
			out[name] = body[8 : 8+m]
			body = body[8+m:]
			continue
		}
		var data []byte
		for {
			if len(body) < 4 {
				return nil, fmt.Errorf("section %q: truncated chunk header", name)
			}
			m := uint64(le.Uint32(body))
			if m > uint64(len(body)-4) {
				return nil, fmt.Errorf("section %q: chunk overruns the file", name)
			}
			chunk := body[4 : 4+m]
			body = body[4+m:]
			if m == 0 {
				break
			}
			data = append(data, chunk...)
		}
		out[name] = data
	}
	if len(body) != 0 {
		return nil, errors.New("trailing bytes")
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
