package model

import "fmt"

// Extrapolator is a bottom whose weights can be moved ahead of the
// updates it has not applied yet, for one forward: linear weight
// prediction under a pipelined schedule (party/passive, Config.
// StalenessPrediction; docs/methods/wan.md). DeepBottom implements it
// for its dense layers.
type Extrapolator interface {
	// TrackUpdates makes every later Step record the change it made to
	// the extrapolated weights (a copy of them per Step).
	TrackUpdates()
	// Extrapolate adds f times the change of the last Step to the
	// extrapolated weights, keeping their values for Restore. It is an
	// error before TrackUpdates or while extrapolated.
	Extrapolate(f float32) error
	// Restore puts back the weights Extrapolate moved; without an
	// Extrapolate since the last Restore it does nothing.
	Restore()
}

// weightTrack is a DeepBottom's record of its last Step's change to the
// dense layers' weights and biases, and their values while extrapolated.
type weightTrack struct {
	delta, saved [][]float32
	moved        bool
}

// TrackUpdates implements Extrapolator. The categorical embeddings are
// not extrapolated (a hashed table is large and a Step changes only the
// rows of its batch).
func (b *DeepBottom) TrackUpdates() {
	if b.track != nil {
		return
	}
	b.track = &weightTrack{}
	for _, p := range b.params {
		b.track.delta = append(b.track.delta, make([]float32, len(p.W.Data)))
		b.track.saved = append(b.track.saved, make([]float32, len(p.W.Data)))
	}
}

// Extrapolate implements Extrapolator.
func (b *DeepBottom) Extrapolate(f float32) error {
	switch {
	case b.track == nil:
		return fmt.Errorf("model: passive Extrapolate without TrackUpdates")
	case b.track.moved:
		return fmt.Errorf("model: passive Extrapolate twice without a Restore")
	}
	for i, p := range b.params {
		copy(b.track.saved[i], p.W.Data)
		d := b.track.delta[i]
		for j := range p.W.Data {
			p.W.Data[j] += f * d[j]
		}
	}
	b.track.moved = true
	return nil
}

// Restore implements Extrapolator.
func (b *DeepBottom) Restore() {
	if b.track == nil || !b.track.moved {
		return
	}
	for i, p := range b.params {
		copy(p.W.Data, b.track.saved[i])
	}
	b.track.moved = false
}

// beforeStep keeps the tracked weights' values before a Step.
func (b *DeepBottom) beforeStep() error {
	if b.track == nil {
		return nil
	}
	if b.track.moved {
		return fmt.Errorf("model: passive Step while the weights are extrapolated")
	}
	for i, p := range b.params {
		copy(b.track.delta[i], p.W.Data)
	}
	return nil
}

// afterStep turns the values beforeStep kept into the Step's change.
func (b *DeepBottom) afterStep() {
	if b.track == nil {
		return
	}
	for i, p := range b.params {
		d := b.track.delta[i]
		for j, w := range p.W.Data {
			d[j] = w - d[j]
		}
	}
}
