package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/splitguard/splitguard/attack"

	"github.com/splitguard/splitguard/metrics"
)

// stateTag versions the auditor's checkpoint encoding. v2 saves each
// batch's scored positives and negatives next to its AUC (for the chance
// floor of the summary); v1 did not.
const stateTag = "splitguard/audit/v2"

// stateTagTuned is v2 followed by the tuned attackers' running records
// (attack.Tuned.State), written when the tuned attackers are on.
const stateTagTuned = "splitguard/audit/v3"

// stateTagV1 is the previous encoding, refused by name: its series lack
// the batch compositions, and restoring them as anything would make the
// summary's chance floor wrong.
const stateTagV1 = "splitguard/audit/v1"

// MarshalBinary returns the auditor's accumulated state for a checkpoint:
// its random stream (oracle and hint choices) and every leak series so
// far (each batch's AUC with its numbers of scored positives and
// negatives, and the count of skipped batches). An auditor restored with
// UnmarshalBinary continues exactly as the saved one would have. The
// epoch-memory attacks keep a running sum per example; their state is not
// saved, so MarshalBinary refuses when one is configured.
func (a *Auditor) MarshalBinary() ([]byte, error) {
	if a.memory != nil {
		return nil, errors.New("audit: the epoch-memory attacks cannot be checkpointed")
	}
	rs, err := a.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("audit: random state: %w", err)
	}
	tag := stateTag
	if len(a.tuned) > 0 {
		tag = stateTagTuned
	}
	b := appendStr(nil, tag)
	b = appendStr(b, string(rs))
	keys := a.leak.Keys()
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		at, layer, _ := strings.Cut(k, "/")
		s := a.leak.Summary(at, layer)
		series := a.leak.Series(at, layer)
		comps := a.leak.Compositions(at, layer)
		b = appendStr(b, k)
		b = binary.LittleEndian.AppendUint32(b, uint32(s.Skipped))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(series)))
		for i, v := range series {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			b = binary.LittleEndian.AppendUint32(b, uint32(comps[i].Pos))
			b = binary.LittleEndian.AppendUint32(b, uint32(comps[i].Neg))
		}
	}
	if len(a.tuned) > 0 {
		b = a.appendTuned(b)
	}
	return b, nil
}

// UnmarshalBinary restores a state saved by MarshalBinary into an auditor
// made by New with the same attacks and seed that has observed nothing.
// A series may hold at most MaxRestoredSteps batches; use
// UnmarshalBinaryAt when the checkpoint's step is known.
func (a *Auditor) UnmarshalBinary(data []byte) error {
	return a.UnmarshalBinaryAt(data, MaxRestoredSteps)
}

// MaxRestoredSteps bounds the batches of one series UnmarshalBinary
// restores, so that a damaged or forged count cannot make it loop for
// billions of steps.
const MaxRestoredSteps = 1 << 26

// UnmarshalBinaryAt is UnmarshalBinary for the state of a run after steps
// training steps: no series may hold more batches than that.
func (a *Auditor) UnmarshalBinaryAt(data []byte, steps int64) error {
	if a.memory != nil {
		return errors.New("audit: the epoch-memory attacks cannot be restored from a checkpoint")
	}
	if len(a.leak.Keys()) != 0 {
		return errors.New("audit: restoring a checkpoint into an auditor that has already observed batches")
	}
	r := reader{b: data}
	tag := r.str()
	if r.err == nil && tag == stateTagTuned && len(a.tuned) == 0 {
		return fmt.Errorf("audit: checkpoint state %q holds tuned attackers' records, but the tuned attackers are off", tag)
	}
	if r.err == nil && tag != stateTag && tag != stateTagTuned {
		if tag == stateTagV1 {
			return fmt.Errorf("audit: checkpoint state %q is from an older splitguard: it lacks the batch compositions that %q records; restart the run from scratch", tag, stateTag)
		}
		return fmt.Errorf("audit: checkpoint state %q, want %q", tag, stateTag)
	}
	rs := r.str()
	n := r.u32()
	leak := metrics.NewLeak()
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str()
		skipped, m := r.u32(), r.u32()
		at, layer, ok := strings.Cut(k, "/")
		if r.err == nil && !ok {
			r.err = fmt.Errorf("series name %q has no layer", k)
		}
		if m > len(r.b)/16 {
			r.err = errors.New("truncated")
		}
		if r.err == nil && int64(m)+int64(skipped) > steps {
			r.err = fmt.Errorf("series %s holds %d batches, more than the %d steps of the run", k, int64(m)+int64(skipped), steps)
		}
		for range m {
			if r.err != nil {
				break
			}
			v := math.Float64frombits(r.u64())
			pos, neg := r.u32(), r.u32()
			if r.err != nil {
				break
			}
			if math.IsNaN(v) || v < 0 || v > 1 {
				r.err = fmt.Errorf("series %s holds AUC %v", k, v)
				break
			}
			if pos < 1 || neg < 1 {
				r.err = fmt.Errorf("series %s holds an AUC over %d positives and %d negatives", k, pos, neg)
				break
			}
			leak.Add(at, layer, v, pos, neg, true)
		}
		for range skipped {
			if r.err != nil {
				break
			}
			leak.Add(at, layer, 0, 0, 0, false)
		}
	}
	var restore func() error
	if r.err == nil && tag == stateTagTuned {
		restore = a.readTuned(&r)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("audit: checkpoint state: %w", r.err)
	}
	if err := a.pcg.UnmarshalBinary([]byte(rs)); err != nil {
		return fmt.Errorf("audit: checkpoint random state: %w", err)
	}
	if restore != nil {
		if err := restore(); err != nil {
			return fmt.Errorf("audit: checkpoint state: %w", err)
		}
	}
	a.leak = leak
	return nil
}

// appendTuned appends every tuned attacker's running record: a count, then
// per attacker and layer its key, its number of candidates and each one's
// AUC sum and folds.
func (a *Auditor) appendTuned(b []byte) []byte {
	type rec struct {
		key   string
		sum   []float64
		folds []int
	}
	var recs []rec
	for _, tu := range a.tuned {
		layers := tu.Layers()
		sort.Strings(layers)
		for _, l := range layers {
			sum, folds := tu.State(l)
			recs = append(recs, rec{metrics.Key(tu.Name(), l), sum, folds})
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(recs)))
	for _, r := range recs {
		b = appendStr(b, r.key)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.sum)))
		for c, s := range r.sum {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
			b = binary.LittleEndian.AppendUint32(b, uint32(r.folds[c]))
		}
	}
	return b
}

// readTuned reads what appendTuned wrote and returns the function that
// restores it into the tuned attackers (run once the whole state has
// been read without error).
func (a *Auditor) readTuned(r *reader) func() error {
	type rec struct {
		name, layer string
		sum         []float64
		folds       []int
	}
	var recs []rec
	n := r.u32()
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str()
		m := r.u32()
		if m > len(r.b)/12 {
			r.err = errors.New("truncated")
			break
		}
		name, layer, _ := strings.Cut(k, "/")
		rc := rec{name: name, layer: layer, sum: make([]float64, m), folds: make([]int, m)}
		for c := range m {
			rc.sum[c] = math.Float64frombits(r.u64())
			rc.folds[c] = r.u32()
		}
		recs = append(recs, rc)
	}
	return func() error {
		for _, rc := range recs {
			var tu *attack.Tuned
			for _, t := range a.tuned {
				if t.Name() == rc.name {
					tu = t
				}
			}
			if tu == nil {
				return fmt.Errorf("a record of tuned attacker %s, which is not configured", rc.name)
			}
			if err := tu.Restore(rc.layer, rc.sum, rc.folds); err != nil {
				return err
			}
		}
		return nil
	}
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errors.New("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() int {
	if b := r.take(4); b != nil {
		return int(binary.LittleEndian.Uint32(b))
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) str() string { return string(r.take(r.u32())) }
