package data_test

import (
	"fmt"

	"github.com/splitguard/splitguard/data"
)

// loadStripes is a whole image format in a few lines: it makes n 2×2 grey
// images, every other one positive (a real reader would read dir).
func loadStripes(dir string, o data.ImageOptions) (*data.Split, error) {
	const n, side = 4, 2
	ds := &data.Dataset{X: &data.Features{Rows: n, NumDense: side * side,
		Image: &data.ImageShape{Height: side, Width: side, Channels: 1}}}
	for i := range n {
		ds.IDs = append(ds.IDs, uint64(i))
		ds.Labels = append(ds.Labels, uint8(i%2))
		for range side * side {
			ds.X.Dense = append(ds.X.Dense, float32(i%2))
		}
	}
	return &data.Split{Train: ds, Test: ds, Info: data.Info{Path: dir, Format: "stripes", HasLabels: true}}, nil
}

// A new image format registers itself, usually from its package's init
// function; data.LoadImages (and so config.LoadData and every command)
// then reads it by name.
func ExampleRegisterImageFormat() {
	if !data.IsImageFormat("stripes") { // registering a name twice panics
		data.RegisterImageFormat(data.ImageFormat{Name: "stripes", Size: 2, Channels: 1, Read: loadStripes})
	}

	s, err := data.LoadImages("stripes", "/nowhere", data.ImageOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	size, channels, _ := data.ImageDefaults("stripes")
	fmt.Println(data.IsImageFormat("stripes"), size, channels, s.Train.X.Rows, s.Train.Labels)
	// Output: true 2 1 4 [0 1 0 1]
}
