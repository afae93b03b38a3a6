package completion

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRun times the model-completion attacks (completion,
// completion_supervised), which run once per evaluation rather than per
// batch: 40 known labels, DefaultUnlabelled unlabelled training rows and
// 8192 test rows through a cut of width 128 (the bottom is the identity,
// so the time is the attacks' own).
func BenchmarkRun(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	train, trainY := features(r, 20000, 128, 0.25)
	test, testY := features(r, 8192, 128, 0.25)
	rows, err := Pick(trainY, 40, DefaultUnlabelled, 5)
	if err != nil {
		b.Fatal(err)
	}
	a, err := New([]string{"completion", "completion_supervised"}, rows, 8192, 5)
	if err != nil {
		b.Fatal(err)
	}
	bottom := &identity{d: 128}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(bottom, train, test, testY); err != nil {
			b.Fatal(err)
		}
	}
}
