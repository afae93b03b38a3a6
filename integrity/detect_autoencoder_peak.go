package integrity

func init() {
	RegisterDetector(DetectorSpec{Name: "autoencoder_peak",
		Help: "the autoencoder detector's worst row: log10(1 + its reconstruction error / the running mean error of earlier inlier rows)",
		New:  func() Detector { return &autoencoder{name: "autoencoder_peak", peak: true} }})
}
