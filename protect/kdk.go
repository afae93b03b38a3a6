package protect

import (
	"fmt"

	"github.com/splitguard/splitguard/configkey"
)

func init() {
	Register(Spec{Name: "kdk", Color: 0x00838f, Role: AddOn, Help: "KDk: the loss uses the anonymised soft label (1−ε for the true class, ε/(k−1) for each other of the k; with two classes ε for the other), decoded at evaluation and inference",
		Params: []Param{
			{Key: "kdk_eps", Symbol: "ε", Help: "KDk: probability ε moved from the true class to the other class of its anonymity set (two classes: k = 2, so ε < ½)", Min: 0, Max: 0.5, MaxOpen: true},
		},
		NewCodec: func(p Params, _ uint64) (LabelCodec, error) { return NewKDk(p.Get("kdk_eps")) }})
}

// KDk is the defence of Arazzi, Nicolazzo and Nocera ("KDk: a defense
// mechanism against label inference attacks in vertical federated
// learning", Neurocomputing 2025; arXiv 2404.12369), for two classes.
//
// With C classes the active party trains a teacher on its own data and,
// for each training example, takes the k classes the teacher ranks
// highest; the target of the federated model's loss puts 1−ε on the true
// class and ε/(k−1) on each of those k classes that is not the true one
// (k-anonymity: the true class hides among k). With two classes the only
// anonymity set larger than one is both classes (k = 2), which contains
// every teacher's top two, so the teacher has no effect: the target is
// 1−ε on the true class and ε on the other, i.e. the soft positive-class
// target
//
//	t(y) = ε + (1−2ε)·y,
//
// and every gradient the passive party receives is that of these targets.
// ε must stay below ½ (at ½ the target carries no label; beyond it the
// labels are swapped, which the authors' multi-class default ε = 0.65
// never does with k ≥ 3). The paper uses the trained model's predictions
// unchanged; here the predicted probability p is also mapped back by the
// inverse of t, (p−ε)/(1−2ε) (clipped to [0, 1] by the caller), so that a
// model that learns E[t | x] reports P(y = 1 | x). The map is increasing:
// ranking figures (AUC) are those of the raw predictions.
type KDk struct {
	// Eps is ε in [0, ½).
	Eps float64
}

// NewKDk returns KDk for two classes with 0 ≤ ε < ½.
func NewKDk(eps float64) (*KDk, error) {
	if !(eps >= 0 && eps < 0.5) {
		return nil, configkey.Keyed(fmt.Errorf("KDk: ε = %v, want 0 ≤ ε < 0.5 with two classes (key kdk_eps)", eps), "kdk_eps")
	}
	return &KDk{Eps: eps}, nil
}

// Name returns "kdk".
func (*KDk) Name() string { return "kdk" }

// Encode returns the soft positive-class target ε + (1−2ε)·y.
func (k *KDk) Encode(y uint8) float32 {
	if y != 0 {
		return float32(1 - k.Eps)
	}
	return float32(k.Eps)
}

// Decode returns (p−ε)/(1−2ε), the inverse of the target map.
func (k *KDk) Decode(p float64) float64 { return (p - k.Eps) / (1 - 2*k.Eps) }
