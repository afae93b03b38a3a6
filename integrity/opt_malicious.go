package integrity

// The malicious local optimiser's settings: the authors' code's
// gamma_lr_scale_up and its bounds on the ratio.
const (
	maliciousGamma = 1.0
	maliciousRMax  = 5.0
)

func init() {
	RegisterOptimizer(OptimizerSpec{Name: "malicious_sgd",
		Help: "Fu et al. 2022's malicious local optimiser (active model completion): SGD with momentum whose step grows, element by element, while its direction holds (×clamp(1 + u/u', 1, 5)), so that the passive's bottom absorbs more of the task",
		New: func(lr float64) Optimizer {
			return &localSGD{lr: lr, momentum: sgdMomentum, gamma: maliciousGamma, rMax: maliciousRMax}
		}})
}
