package images

import "fmt"

// FashionMNISTClasses returns the class (0…9) of every Fashion-MNIST
// example indexed by its example ID as [LoadFashionMNIST] assigns them:
// the training labels (IDs 0…Ntrain−1), then the test labels. It reads only
// the two label files of dir (plain or .gz). The binary task keeps one
// class positive; this is the original class, for offline multi-class
// attacks on a run's dump.
func FashionMNISTClasses(dir string) ([]uint8, error) {
	var all []uint8
	for _, name := range []string{"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"} {
		path, dims, _, err := readIDX(dir, name, idxLabelsMagic)
		if err != nil {
			return nil, err
		}
		if len(dims) != 1 {
			return nil, fmt.Errorf("fashion-mnist: %s: %d dimensions, want 1", path, len(dims))
		}
		body, err := readIDXLabels(dir, name, dims[0])
		if err != nil {
			return nil, err
		}
		all = append(all, body...)
	}
	return all, nil
}
