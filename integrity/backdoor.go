package integrity

import (
	"fmt"
	"sort"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// Backdoor is a passive party planting a backdoor in the joint model: it
// may change the features of a training batch before its bottom's
// forward pass, the embedding it sends and the gradient it learns from.
// It sees what a passive party sees (example IDs, its own features,
// embeddings and received gradients) and the IDs of a few training rows
// of the target class (BackdoorConfig.Known), never a label.
type Backdoor interface {
	Name() string
	// Features changes, in place, the features b of the training batch
	// of rows ids at step, before the bottom's forward pass.
	Features(step int64, ids []uint64, b *data.Batch) error
	// Send returns the embedding to send at step in place of e, the
	// bottom's output of the batch Features left (valid until the next
	// call; e is not changed).
	Send(step int64, ids []uint64, e *tensor.Matrix) (*tensor.Matrix, error)
	// Gradient returns the gradient the bottom learns from in place of g,
	// the one received for the batch (valid until the next call; g is
	// not changed).
	Gradient(step int64, ids []uint64, g *tensor.Matrix) (*tensor.Matrix, error)
	// TriggerFeatures and TriggerEmbedding put the trigger on test rows:
	// their features before the bottom's forward pass, then the
	// embedding it gives (in place).
	TriggerFeatures(b *data.Batch)
	TriggerEmbedding(e *tensor.Matrix)
}

// BackdoorConfig is what a backdoor attack is given.
type BackdoorConfig struct {
	// Known are the IDs of training rows the attacker knows to be of the
	// target class.
	Known []uint64
	// Train are the passive party's training IDs and features,
	// row-aligned (the attacker's own data).
	TrainIDs []uint64
	Train    *data.Features
	// From is the first step at which the attack changes anything
	// (label inference may watch before).
	From int64
	// Poison is the share of training rows the attacker poisons (its
	// meaning is the attack's; 0: the attack's default).
	Poison float64
	// Amplify is the attack's amplification (γ of gradient replacement,
	// β of VILLAIN; 0: the attack's default).
	Amplify float64
	// TriggerValue is the value a feature-space trigger writes into the
	// passive party's dense columns (0: the attack's default).
	TriggerValue float64
	// Pairing is how gradient replacement pairs poisoned rows with known
	// target rows: PairingInBatch (""), PairingFixed.
	Pairing string
	Seed    uint64
	// DryRun leaves the party honest: the attack only watches the
	// embeddings it would send and keeps its trigger, to measure that
	// trigger on an honestly trained model.
	DryRun bool
}

// BackdoorSpec declares a backdoor attack.
type BackdoorSpec struct {
	Name string
	Help string
	New  func(BackdoorConfig) (Backdoor, error)
}

var backdoors = map[string]BackdoorSpec{}

// RegisterBackdoor adds a backdoor attack; it panics on a duplicate or
// empty name.
func RegisterBackdoor(s BackdoorSpec) {
	if s.Name == "" || s.New == nil {
		panic("integrity: a backdoor needs a name and New")
	}
	if _, ok := backdoors[s.Name]; ok {
		panic("integrity: backdoor " + s.Name + " registered twice")
	}
	backdoors[s.Name] = s
}

// BackdoorNames lists the registered backdoor attacks, sorted.
func BackdoorNames() []string {
	out := make([]string, 0, len(backdoors))
	for n := range backdoors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BackdoorHelp is the help line of a registered backdoor ("" if none).
func BackdoorHelp(name string) string { return backdoors[name].Help }

// NewBackdoor returns the backdoor attack name.
func NewBackdoor(name string, c BackdoorConfig) (Backdoor, error) {
	s, ok := backdoors[name]
	if !ok {
		return nil, fmt.Errorf("integrity: unknown backdoor %q (known: %v)", name, BackdoorNames())
	}
	switch {
	case c.From < 0:
		return nil, fmt.Errorf("integrity: backdoor from step %d, want at least 0", c.From)
	case c.Poison < 0 || c.Poison >= 1 || c.Poison != c.Poison:
		return nil, fmt.Errorf("integrity: backdoor poison share %g, want in [0, 1)", c.Poison)
	case c.Amplify < 0 || c.Amplify != c.Amplify:
		return nil, fmt.Errorf("integrity: backdoor amplification %g, want ≥ 0", c.Amplify)
	case len(c.Known) == 0:
		return nil, fmt.Errorf("integrity: backdoor %s needs at least one known row of the target class", name)
	case c.Train == nil || len(c.TrainIDs) != c.Train.Rows:
		return nil, fmt.Errorf("integrity: backdoor %s needs the passive party's training rows and their IDs", name)
	}
	b, err := s.New(c)
	if err != nil || !c.DryRun {
		return b, err
	}
	return dryRun{b}, nil
}

// copyInto copies m into dst (resized) and returns dst.
func copyInto(dst **tensor.Matrix, m *tensor.Matrix) *tensor.Matrix {
	*dst = clone(*dst, m)
	return *dst
}

// copyRow copies row src of f into row r of b.
func copyRow(b *data.Batch, r int, f *data.Features, src int) {
	if f.NumDense > 0 {
		copy(b.Dense.Data[r*f.NumDense:(r+1)*f.NumDense], f.Dense[src*f.NumDense:(src+1)*f.NumDense])
	}
	if f.NumCat > 0 {
		copy(b.Cat[r*f.NumCat:(r+1)*f.NumCat], f.Cat[src*f.NumCat:(src+1)*f.NumCat])
	}
}

// idSet is a set of example IDs.
func idSet(ids []uint64) map[uint64]bool {
	s := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}
