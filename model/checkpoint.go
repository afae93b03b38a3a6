package model

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/splitguard/splitguard/nn"
	"io"
	"math"
)

// Checkpoint format (little-endian):
//
//	magic "SGMODEL\x00", version uint32 (1), kind (uint32 length + bytes)
//	section count uint32, then per section: name (uint32 length + bytes), float count uint64
//	counter count uint32, then the counters as int64 (optimiser step counts)
//	the sections' float32 values, in order
//
// Load checks the kind and every section's name and size against the
// model it restores into, so a checkpoint only loads into a model of the
// same config and schema. Embedding sections are nn.Embedding.Store as is
// (weights, moments, and a scratch slot that Load resets).

const (
	ckMagic   = "SGMODEL\x00"
	ckVersion = 1
)

type section struct {
	name string
	data []float32
}

// state lists what a checkpoint holds for a model.
type state struct {
	kind     string
	sections []section
	counters []*int64
	loaded   []func() // run after a successful Load
}

// addAdam appends the dense parameters and their Adam moments and step
// count to s.
func (s *state) addAdam(params []*nn.Param, opt *nn.Adam) {
	for i, p := range params {
		s.sections = append(s.sections,
			section{fmt.Sprintf("param%d.%s", i, p.Name), p.W.Data},
			section{fmt.Sprintf("param%d.adam_m", i), opt.M[i].Data},
			section{fmt.Sprintf("param%d.adam_v", i), opt.V[i].Data})
	}
	s.counters = append(s.counters, &opt.T)
}

func (b *DeepBottom) state() state {
	s := state{kind: "bottom"}
	s.addAdam(b.params, b.opt)
	s.addStepper(b.params, b.stepper)
	if b.emb != nil {
		s.sections = append(s.sections, section{"embedding.weight_m_v", b.emb.Store()})
		s.counters = append(s.counters, &b.embOpt.T)
		s.loaded = append(s.loaded, b.emb.ClearTouched)
	}
	return s
}

func (t *DeepTop) state() state {
	s := state{kind: "top"}
	s.addAdam(t.params, t.opt)
	if t.wideEmb != nil {
		s.sections = append(s.sections, section{"wide_embedding.weight_m_v", t.wideEmb.Store()})
		s.counters = append(s.counters, &t.wideEmbOpt.T)
		s.loaded = append(s.loaded, t.wideEmb.ClearTouched)
	}
	if t.wideScale != nil {
		// The statistics of the training rows the model was built on, so
		// that a loaded model scores as trained whatever rows it is built
		// over.
		s.sections = append(s.sections, section{"wide_dense.mean_invsd", t.wideScale.meanInv})
	}
	return s
}

// Save implements Bottom: parameters, Adam moments and step counts.
func (b *DeepBottom) Save(w io.Writer) error { return save(w, b.state()) }

// Load implements Bottom. On error the model's state is unspecified.
func (b *DeepBottom) Load(r io.Reader) error {
	b.pending = false
	return load(r, b.state())
}

// Save implements Top.
func (t *DeepTop) Save(w io.Writer) error { return save(w, t.state()) }

// Load implements Top. On error the model's state is unspecified.
func (t *DeepTop) Load(r io.Reader) error {
	t.pending = false
	return load(r, t.state())
}

func save(w io.Writer, s state) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	le := binary.LittleEndian
	var hdr []byte
	hdr = append(hdr, ckMagic...)
	hdr = le.AppendUint32(hdr, ckVersion)
	hdr = appendString(hdr, s.kind)
	hdr = le.AppendUint32(hdr, uint32(len(s.sections)))
	for _, sec := range s.sections {
		hdr = appendString(hdr, sec.name)
		hdr = le.AppendUint64(hdr, uint64(len(sec.data)))
	}
	hdr = le.AppendUint32(hdr, uint32(len(s.counters)))
	for _, c := range s.counters {
		hdr = le.AppendUint64(hdr, uint64(*c))
	}
	if _, err := bw.Write(hdr); err != nil {
		return fmt.Errorf("model: saving %s checkpoint: %w", s.kind, err)
	}
	var buf [4096]byte
	for _, sec := range s.sections {
		for d := sec.data; len(d) > 0; {
			n := min(len(d), len(buf)/4)
			for i, v := range d[:n] {
				le.PutUint32(buf[4*i:], math.Float32bits(v))
			}
			if _, err := bw.Write(buf[:4*n]); err != nil {
				return fmt.Errorf("model: saving %s checkpoint, section %s: %w", s.kind, sec.name, err)
			}
			d = d[n:]
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("model: saving %s checkpoint: %w", s.kind, err)
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint32(b, uint32(len(s))), s...)
}

func load(r io.Reader, s state) error {
	br := bufio.NewReaderSize(r, 1<<16)
	le := binary.LittleEndian
	fail := func(what string, err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("model: loading %s checkpoint: %s: %w", s.kind, what, err)
	}
	magic := make([]byte, len(ckMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return fail("magic", err)
	}
	if string(magic) != ckMagic {
		return fmt.Errorf("model: loading %s checkpoint: not a splitguard model checkpoint", s.kind)
	}
	var u32 [4]byte
	readU32 := func(what string) (uint32, error) {
		if _, err := io.ReadFull(br, u32[:]); err != nil {
			return 0, fail(what, err)
		}
		return le.Uint32(u32[:]), nil
	}
	var u64 [8]byte
	readU64 := func(what string) (uint64, error) {
		if _, err := io.ReadFull(br, u64[:]); err != nil {
			return 0, fail(what, err)
		}
		return le.Uint64(u64[:]), nil
	}
	readString := func(what string) (string, error) {
		n, err := readU32(what)
		if err != nil {
			return "", err
		}
		if n > 1<<12 {
			return "", fmt.Errorf("model: loading %s checkpoint: %s of %d bytes is implausible", s.kind, what, n)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", fail(what, err)
		}
		return string(b), nil
	}
	v, err := readU32("version")
	if err != nil {
		return err
	}
	if v != ckVersion {
		return fmt.Errorf("model: loading %s checkpoint: version %d, this build reads %d", s.kind, v, ckVersion)
	}
	kind, err := readString("kind")
	if err != nil {
		return err
	}
	if kind != s.kind {
		return fmt.Errorf("model: loading %s checkpoint: the file holds a %s model", s.kind, kind)
	}
	n, err := readU32("section count")
	if err != nil {
		return err
	}
	if int(n) != len(s.sections) {
		return fmt.Errorf("model: loading %s checkpoint: %d sections, the model has %d (different config or schema?)", s.kind, n, len(s.sections))
	}
	for _, sec := range s.sections {
		name, err := readString("section name")
		if err != nil {
			return err
		}
		size, err := readU64("section size")
		if err != nil {
			return err
		}
		if name != sec.name || size != uint64(len(sec.data)) {
			return fmt.Errorf("model: loading %s checkpoint: section %q of %d values where the model has %q of %d (different config or schema?)", s.kind, name, size, sec.name, len(sec.data))
		}
	}
	nc, err := readU32("counter count")
	if err != nil {
		return err
	}
	if int(nc) != len(s.counters) {
		return fmt.Errorf("model: loading %s checkpoint: %d step counters, the model has %d", s.kind, nc, len(s.counters))
	}
	counts := make([]int64, nc)
	for i := range counts {
		c, err := readU64("step counter")
		if err != nil {
			return err
		}
		counts[i] = int64(c)
	}
	var buf [4096]byte
	for _, sec := range s.sections {
		for d := sec.data; len(d) > 0; {
			k := min(len(d), len(buf)/4)
			if _, err := io.ReadFull(br, buf[:4*k]); err != nil {
				return fail("section "+sec.name, err)
			}
			for i := range d[:k] {
				d[i] = math.Float32frombits(le.Uint32(buf[4*i:]))
			}
			d = d[k:]
		}
	}
	for i, c := range s.counters {
		*c = counts[i]
	}
	for _, f := range s.loaded {
		f()
	}
	return nil
}
