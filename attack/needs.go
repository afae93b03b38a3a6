package attack

// Needs is what an attack declares about itself: what it reads and what
// it needs beyond that matrix. The auditor (package audit) and the
// passive party's red team provide exactly this and never match attack
// names.
type Needs struct {
	// Input says whether the attack reads the gradient at a layer or the
	// layer's forward output.
	Input Kind
	// Oracle: the attack needs the clean (unprotected) gradient of one
	// positive of the batch at the same layer ([Observation.Oracle]). Only
	// an auditor that holds the labels can provide it; a batch without a
	// positive then has no score for the attack.
	Oracle bool
	// Hints is how many rows known to be positive the attack uses
	// ([Observation.Hints]); 0 for none.
	Hints int
	// EpochMemory: the attack remembers every example's gradients across
	// the epoch and scores all examples at the epoch's end (an
	// [EpochAttack]). Its state grows with the number of examples and is
	// not checkpointed.
	EpochMemory bool
	// KnownRows is how many rows of the batch, of either class, the attack
	// knows the labels of ([Observation.Known] and [Observation.KnownLabels]);
	// 0 for none. The known rows are not scored.
	KnownRows int
	// WithOutput: a gradient attack that also reads the layer's forward
	// output ([Observation.Output]), e.g. to fit a surrogate top model.
	WithOutput bool
	// Model: the attack runs on the trained bottom model rather than on a
	// batch (a [ModelAttack], model completion): it reads the bottom's cut
	// output of the attacker's known-label training rows, of unlabelled
	// training rows and of the rows it scores, and is run at every test
	// evaluation and offline, never per batch.
	Model bool
	// Expensive: the attack costs far more than the others (seconds per
	// batch); "all" leaves it out, and it runs only when named.
	Expensive bool
}

// LabelFree reports whether a party without any label can run the attack
// on what it holds: no oracle, no hints.
func (n Needs) LabelFree() bool { return !n.Oracle && n.Hints == 0 && n.KnownRows == 0 && !n.Model }

// EpochAttack is an attack that scores at the end of every epoch, from a
// [Memory] of every gradient the passive party received at a layer (the
// auditor keeps one Memory for all epoch attacks and feeds it every
// batch, with the oracle when any epoch attack declares Needs.Oracle).
type EpochAttack interface {
	// Name is the attack's registered name, e.g. "memory_norm".
	Name() string
	// Needs declares what the attack needs; EpochMemory is true.
	Needs() Needs
	// ScoreEpoch writes into dst one score per example remembered at layer,
	// in the order of [Memory.IDs], and returns dst. It returns nil scores
	// (and no error) when the attack is undefined at the layer (e.g. the
	// oracle direction was never seen).
	ScoreEpoch(m *Memory, layer string, dst []float64) ([]float64, error)
}
