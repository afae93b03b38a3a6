package netrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// checkpointMagic starts every checkpoint file; checkpointMagicV1 the
// files of earlier versions, whose sections are stored as they are (v2
// stores them with runs of zero bytes encoded, see packZeros).
const (
	checkpointMagic   = "splitguard-checkpoint/v2\n"
	checkpointMagicV1 = "splitguard-checkpoint/v1\n"
)

// store keeps one party's checkpoints in a directory: files
// ROLE-STEP.ckpt, each written to a temporary name and renamed into place,
// made of named sections and ending in a SHA-256 of everything before it.
type store struct {
	dir, role string
	// keep is how many of the newest checkpoints stay (at least 2; 0 or
	// less means DefaultKeepCheckpoints).
	keep int
}

func (s *store) path(step int64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s-%012d.ckpt", s.role, step))
}

// save writes the checkpoint of step atomically and prunes old ones.
func (s *store) save(step int64, sections map[string][]byte) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	names := make([]string, 0, len(sections))
	for n := range sections {
		names = append(names, n)
	}
	slices.Sort(names)
	b := []byte(checkpointMagic)
	b = binary.LittleEndian.AppendUint64(b, uint64(step))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(n)))
		b = append(b, n...)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(sections[n])))
		at := len(b)
		b = binary.LittleEndian.AppendUint64(b, 0) // packed length, set below
		b = packZeros(b, sections[n])
		binary.LittleEndian.PutUint64(b[at:], uint64(len(b)-at-8))
	}
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	path := s.path(step)
	tmp, err := os.CreateTemp(s.dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return s.prune(step)
}

// prune deletes the oldest checkpoints beyond the newest s.keep, once the
// one just written (step) reads back intact; it never deletes that one,
// nor a checkpoint newer than it.
func (s *store) prune(step int64) error {
	if _, err := s.load(step); err != nil {
		return err // keep everything: the new checkpoint is not good
	}
	keep := s.keep
	if keep <= 0 {
		keep = DefaultKeepCheckpoints
	}
	keep = max(keep, 2)
	steps, err := s.steps()
	if err != nil {
		return err
	}
	for len(steps) > keep {
		if steps[0] >= step {
			break
		}
		if err := os.Remove(s.path(steps[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint: pruning: %w", err)
		}
		steps = steps[1:]
	}
	return nil
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
	fail := func(why string) (map[string][]byte, error) {
		return nil, fmt.Errorf("checkpoint %s: %s", path, why)
	}
	packed := bytes.HasPrefix(b, []byte(checkpointMagic))
	if len(b) < len(checkpointMagic)+12+sha256.Size || !(packed || bytes.HasPrefix(b, []byte(checkpointMagicV1))) {
		return fail("not a splitguard checkpoint")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return fail("checksum mismatch (corrupted or truncated)")
	}
	body = body[len(checkpointMagic):]
	if got := int64(binary.LittleEndian.Uint64(body)); got != step {
		return fail(fmt.Sprintf("holds step %d", got))
	}
	n := binary.LittleEndian.Uint32(body[8:])
	body = body[12:]
	out := map[string][]byte{}
	for range n {
		if len(body) < 4 {
			return fail("truncated section header")
		}
		l := int(binary.LittleEndian.Uint32(body))
		if len(body) < 4+l+8 {
			return fail("truncated section name")
		}
		name := string(body[4 : 4+l])
		body = body[4+l:]
		m := binary.LittleEndian.Uint64(body)
		body = body[8:]
		if !packed {
			if m > uint64(len(body)) {
				return fail("section " + name + " overruns the file")
			}
			out[name] = body[:m]
			body = body[m:]
			continue
		}
		if len(body) < 8 {
			return fail("truncated section " + name)
		}
		pl := binary.LittleEndian.Uint64(body)
		body = body[8:]
		if pl > uint64(len(body)) {
			return fail("section " + name + " overruns the file")
		}
		sec, err := unpackZeros(body[:pl], m)
		if err != nil {
			return fail("section " + name + ": " + err.Error())
		}
		out[name] = sec
		body = body[pl:]
	}
	if len(body) != 0 {
		return fail("trailing bytes")
	}
	return out, nil
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
// size bytes.
func unpackZeros(p []byte, size uint64) ([]byte, error) {
	out := make([]byte, 0, size)
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
		out = out[:len(out)+int(zeros)] // the capacity is zeroed
		p = p[k:]
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("unpacks to %d bytes, want %d", len(out), size)
	}
	return out, nil
}
