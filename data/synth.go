package data

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// Synthetic Criteo-shaped data.
//
// The generator is class-conditional, which makes the positive rate exact
// in expectation: y ~ Bernoulli(posRate), then the features given y.
//
//   - Categorical column j takes value k with Zipf probability
//     ∝ (1+k)^(−s_j), k < card_j, or is NA with probability na_j. The
//     cardinalities and NA rates mimic Criteo's (columns of 3 to 100,000
//     values; several with 3–76% NA). Value k is written as 8 hex digits of
//     a per-column bijection of k.
//   - Integer column j is ⌊exp(μ_j + σ_j·Z)⌋ (heavy-tailed, non-negative)
//     or NA with Criteo-like rates.
//   - Negatives draw every feature from that base distribution.
//   - Positives are a mixture (METHODS §1's positive-class ambiguity): a share
//     synthAmbiguous of them draw their features from the base
//     distribution too, exactly like negatives, so no model can be
//     confident about them; the others ("informative") draw a few groups
//     of categorical columns from the base distribution tilted by a weight
//     w_g(values) = exp(−γ_g·u_g(values)) with u_g a hash-uniform in
//     [0, 1) of the group's values (rejection sampling), and have
//     shifted integer columns. Groups are single low/medium-cardinality
//     columns (their frequent values carry the signal, so a model sees
//     each many times per epoch) and pairs of columns whose joint value,
//     not either value alone, is tilted (interactions).
//
// The posterior P(y=1 | x) is therefore logistic in
// log(α + (1−α)·Π_g w_g/E[w_g]): a logistic model of a few features and
// their interactions, with positives less predictable than negatives.

// DefaultSynthPosRate is the positive rate of synthetic data unless asked
// otherwise (Criteo's is about 0.25).
const DefaultSynthPosRate = 0.25

// synthStream is the PCG stream constant of the generator.
const synthStream uint64 = 0x53594e5448 // "SYNTH"

// synthAmbiguous is the share of positives whose features are drawn like
// a negative's.
const synthAmbiguous = 0.25

// synthCatSpec describes one synthetic categorical column.
type synthCatSpec struct {
	card int
	na   float64
	s    float64 // Zipf exponent
}

// synthCats mimics Criteo's C1..C26.
var synthCats = [criteoCat]synthCatSpec{
	{1460, 0, 1.2}, {583, 0, 1.2}, {100000, .034, 1.05}, {60000, .034, 1.05}, {305, 0, 1.3},
	{24, .12, 1.3}, {12517, 0, 1.1}, {633, 0, 1.3}, {3, 0, 1.5}, {93145, 0, 1.05},
	{5683, 0, 1.1}, {80000, .034, 1.05}, {3194, 0, 1.1}, {27, 0, 1.3}, {14992, 0, 1.1},
	{70000, .034, 1.05}, {10, 0, 1.4}, {5652, 0, 1.1}, {2173, .44, 1.2}, {4, .44, 1.5},
	{90000, .034, 1.05}, {18, .76, 1.4}, {15, 0, 1.3}, {28656, .034, 1.1}, {105, .44, 1.3},
	{40000, .44, 1.1},
}

// synthIntSpec describes one synthetic integer column: NA rate, log-normal
// parameters, and the shift of μ and NA rate for informative positives.
type synthIntSpec struct {
	na, mu, sigma   float64
	shift, naInform float64
}

// synthInts mimics Criteo's I1..I13.
var synthInts = [criteoDense]synthIntSpec{
	{.45, 0.3, 1.2, 0, .30}, {0, 1.5, 1.8, 0, 0}, {.21, 1.8, 1.5, 0, .21}, {.22, 1.6, 1.0, 0, .22},
	{.026, 7.5, 2.0, 0, .026}, {.22, 3.5, 2.0, 0, .22}, {.04, 1.5, 1.6, .5, .04}, {.0005, 2.3, 1.1, 0, .0005},
	{.04, 3.8, 1.5, 0, .04}, {.45, 0.2, 0.6, 0, .45}, {.04, 0.9, 1.0, .6, .04}, {.77, 0.1, 1.2, 0, .77},
	{.22, 1.6, 1.0, -.4, .22},
}

// synthGroup is a group of categorical columns (0-based) whose joint value
// is tilted for informative positives with strength gamma.
type synthGroup struct {
	cols  []int
	gamma float64
}

// synthGroups are the label-bearing features. Their columns have no NA
// and no column is in two groups (so the tilts multiply).
var synthGroups = []synthGroup{
	{[]int{0}, 4},      // C1
	{[]int{1}, 4},      // C2
	{[]int{4}, 4},      // C5
	{[]int{7}, 3},      // C8
	{[]int{10}, 3},     // C11
	{[]int{8, 16}, 4},  // C9 × C17
	{[]int{13, 22}, 4}, // C14 × C23
}

// synthMaxInt caps integer values.
const synthMaxInt = 1e9

// synthRow is one generated example; -1 marks NA.
type synthRow struct {
	label uint8
	ints  [criteoDense]int64
	cats  [criteoCat]int64
	// score is the oracle log-weight Σ_g log w_g of the row's values
	// (tests use it to measure how learnable the label is), set only by
	// a generator with scored.
	score float64
}

// synth generates rows one after another.
type synth struct {
	rng     *rand.Rand
	posRate float64
	zipf    [criteoCat]*rand.Zipf
	keys    [criteoCat]uint32
	// common is the shared-factor draw of key synth_shared (nil: every
	// column drawn independently, as by default).
	common *synthCommon
	// tie draws the label from the common factor (key
	// synth_shared_label; nil: the label first, by posRate).
	tie *labelTie
	// scored makes next set synthRow.score (tests): two transcendental
	// functions per group and row that draw nothing, so the rows are the
	// same without it.
	scored bool
}

func newSynth(posRate float64, seed uint64) (*synth, error) {
	if !(posRate > 0 && posRate < 1) {
		return nil, fmt.Errorf("synth: positive rate %v outside (0, 1)", posRate)
	}
	g := &synth{rng: rand.New(rand.NewPCG(seed, synthStream)), posRate: posRate}
	for j, c := range synthCats {
		g.zipf[j] = rand.NewZipf(g.rng, c.s, 1, uint64(c.card-1))
		g.keys[j] = uint32(mix64(uint64(j)+0xc0ffee) >> 32)
	}
	return g, nil
}

// groupWeight is w_g of the group's current values in r.
func groupWeight(gi int, r *synthRow) float64 {
	g := &synthGroups[gi]
	h := uint64(gi+1) * golden
	for _, c := range g.cols {
		h = mix64(h ^ uint64(r.cats[c]))
	}
	u := float64(h>>11) * 0x1p-53
	return math.Exp(-g.gamma * u)
}

// next fills r with the next example.
func (g *synth) next(r *synthRow) {
	rng := g.rng
	r.label = 0
	informative := false
	if g.tie != nil {
		g.common.drawFactor(rng)
	}
	if rng.Float64() < g.positive() {
		r.label = 1
		informative = rng.Float64() >= synthAmbiguous
	}
	if g.tie == nil {
		g.common.drawFactor(rng)
	}
	for j := range synthCats {
		if rng.Float64() < synthCats[j].na {
			r.cats[j] = -1
		} else {
			r.cats[j] = g.cat(j)
		}
	}
	r.score = 0
	for gi := range synthGroups {
		if informative {
			// Rejection sampling from the base distribution tilted by w_g.
			for rng.Float64() >= groupWeight(gi, r) {
				for _, c := range synthGroups[gi].cols {
					r.cats[c] = g.cat(c)
				}
			}
		}
		if g.scored {
			r.score += math.Log(groupWeight(gi, r))
		}
	}
	for j := range synthInts {
		s := &synthInts[j]
		na, mu := s.na, s.mu
		if informative {
			na, mu = s.naInform, mu+s.shift
		}
		if rng.Float64() < na {
			r.ints[j] = -1
			continue
		}
		r.ints[j] = int64(math.Min(math.Floor(math.Exp(mu+s.sigma*g.normal())), synthMaxInt))
	}
}

// positive is the row's probability of the positive class: posRate, or
// given the common factor when the label is tied to it.
func (g *synth) positive() float64 {
	if g.tie == nil {
		return g.posRate
	}
	return g.tie.positive(g.common.f)
}

// catCode is the 32-bit code written for value k of column j: a bijection
// of k (murmur3's finaliser of k + key), so distinct values never collide.
func (g *synth) catCode(j int, k int64) uint32 {
	h := uint32(k) + g.keys[j]
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// appendRow appends r as a Criteo train.txt line (tab-separated, NA empty,
// trailing newline).
func (g *synth) appendRow(dst []byte, r *synthRow) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '0'+r.label)
	for _, v := range r.ints {
		dst = append(dst, '\t')
		if v >= 0 {
			dst = strconv.AppendInt(dst, v, 10)
		}
	}
	for j, v := range r.cats {
		dst = append(dst, '\t')
		if v >= 0 {
			c := g.catCode(j, v)
			for s := 28; s >= 0; s -= 4 {
				dst = append(dst, hex[(c>>uint(s))&15])
			}
		}
	}
	return append(dst, '\n')
}

// WriteSynth writes rows synthetic examples to w in Criteo's train.txt
// format (tab-separated, no header: label, I1..I13, C1..C26 as 8 hex
// digits, NA empty), streaming. posRate is the expected share of
// positives, in (0, 1); the same (rows, posRate, seed) always writes the
// same bytes, and the first n rows do not depend on rows.
func WriteSynth(w io.Writer, rows int64, posRate float64, seed uint64) error {
	return WriteSynthShared(w, rows, posRate, 0, seed)
}

// WriteSynthShared is [WriteSynth] with a share shared in [0, 1] of every
// column's latent variance drawn from one factor common to all columns
// (see [SynthShared]); shared 0 writes WriteSynth's bytes.
func WriteSynthShared(w io.Writer, rows int64, posRate, shared float64, seed uint64) error {
	return WriteSynthTied(w, rows, posRate, shared, 0, seed)
}

// WriteSynthTied is [WriteSynthShared] with the label tied to the common
// factor with correlation label in [0, 1) (key synth_shared_label; see
// labelTie): every column then carries the label through the factor.
// label 0 writes WriteSynthShared's bytes; a positive label needs a
// positive shared.
func WriteSynthTied(w io.Writer, rows int64, posRate, shared, label float64, seed uint64) error {
	if rows < 0 {
		return fmt.Errorf("synth: negative row count %d", rows)
	}
	g, err := newSynthTied(posRate, shared, label, seed)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var r synthRow
	line := make([]byte, 0, 512)
	for i := int64(0); i < rows; i++ {
		g.next(&r)
		line = g.appendRow(line[:0], &r)
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("synth: row %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// newSynthTied is the generator of [WriteSynthTied]'s rows.
func newSynthTied(posRate, shared, label float64, seed uint64) (*synth, error) {
	g, err := newSynth(posRate, seed)
	if err != nil {
		return nil, err
	}
	if g.common, err = newSynthCommon(shared); err != nil {
		return nil, err
	}
	if g.tie, err = newLabelTie(label, shared, posRate); err != nil {
		return nil, err
	}
	return g, nil
}

// synthPipeDepth is how many chunks of text the generator of Generate
// may write ahead of the loader.
const synthPipeDepth = 4

// Generate makes rows synthetic examples in memory and loads them with
// options o, exactly as [Load] would load the file that [WriteSynth]
// writes for the same (rows, posRate, seed): the same examples, IDs (the
// row numbers), encoding and split. o.Format must be empty or "criteo";
// o.Seed keys the sampling and split, as in Load.
func Generate(rows int, posRate float64, seed uint64, o Options) (*Split, error) {
	return GenerateShared(rows, posRate, 0, seed, o)
}

// GenerateShared is [Generate] of the rows [WriteSynthShared] writes.
func GenerateShared(rows int, posRate, shared float64, seed uint64, o Options) (*Split, error) {
	return GenerateTied(rows, posRate, shared, 0, seed, o)
}

// GenerateTied is [Generate] of the rows [WriteSynthTied] writes.
func GenerateTied(rows int, posRate, shared, label float64, seed uint64, o Options) (*Split, error) {
	if o.Format != "" && o.Format != FormatCriteo {
		return nil, fmt.Errorf("synth: generated data is in Criteo format, not %q", o.Format)
	}
	if rows <= 0 {
		return nil, fmt.Errorf("synth: row count %d, want at least 1", rows)
	}
	g, err := newSynthTied(posRate, shared, label, seed)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("synth(rows=%d, pos=%g, seed=%d)", rows, posRate, seed)
	switch {
	case label > 0:
		name = fmt.Sprintf("synth(rows=%d, pos=%g, shared=%g, label=%g, seed=%d)", rows, posRate, shared, label, seed)
	case shared > 0:
		name = fmt.Sprintf("synth(rows=%d, pos=%g, shared=%g, seed=%d)", rows, posRate, shared, seed)
	}
	if !o.synthText {
		// The first row's text sets the schema; the rest go to the
		// loader parsed (synthdirect.go).
		var r synthRow
		g.next(&r)
		if s, ok, err := loadDirect(g, g.appendRow(nil, &r), name, o, int64(rows)); ok {
			return s, err
		}
	}
	// Otherwise (options whose schema the direct source does not
	// produce, or tests) the generator writes the text on its own
	// goroutine, up to synthPipeDepth chunks of 1 MiB ahead of the loader
	// reading it.
	pipe := newChunkPipe(synthPipeDepth)
	done := make(chan error, 1)
	go func() {
		err := WriteSynthTied(pipe, int64(rows), posRate, shared, label, seed)
		pipe.closeWrite(err)
		done <- err
	}()
	s, err := loadReaderRows(pipe, name, o, int64(rows))
	pipe.closeRead()
	werr := <-done
	if err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, werr
	}
	return s, nil
}
