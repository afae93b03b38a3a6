package attack

func init() {
	RegisterEpoch(MemoryNormName, func() EpochAttack { return &memoryAttack{name: MemoryNormName} })
	RegisterEpoch(MemoryCosineName, func() EpochAttack { return &memoryAttack{name: MemoryCosineName, cosine: true} })
}

// memoryAttack is memory_norm or memory_cosine (see [Memory]): the norm of
// every example's running mean gradient, or its cosine with the mean unit
// oracle direction.
type memoryAttack struct {
	name    string
	cosine  bool
	scratch MemoryScores
}

// Name implements EpochAttack.
func (a *memoryAttack) Name() string { return a.name }

// Needs implements EpochAttack: the epoch memory, and for memory_cosine
// the oracle of every batch.
func (a *memoryAttack) Needs() Needs {
	return Needs{Input: Gradient, Oracle: a.cosine, EpochMemory: true}
}

// ScoreEpoch implements EpochAttack.
func (a *memoryAttack) ScoreEpoch(m *Memory, layer string, dst []float64) ([]float64, error) {
	if err := m.Scores(layer, &a.scratch); err != nil {
		return nil, err
	}
	src := a.scratch.Norm
	if a.cosine {
		src = a.scratch.Cosine
	}
	if src == nil {
		return nil, nil
	}
	return append(dst[:0], src...), nil
}
