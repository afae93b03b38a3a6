package model

import (
	"fmt"

	"github.com/splitguard/splitguard/data"
)

func init() {
	RegisterKind(Kind{Name: "cnn", Help: "a CNN over images: the passive's convolutional blocks up to the cut, the active's blocks after it and the dense head",
		Images: true,
		NewBottom: func(s Settings, x *data.Features) (Bottom, error) {
			if x.Image == nil {
				return nil, fmt.Errorf("model cnn reads images but the data are a table of %d columns", x.NumCat+x.NumDense)
			}
			mc := s.CNN
			if im := *x.Image; im.Height != mc.Height || im.Width != mc.Width || im.Channels != mc.Channels {
				return nil, fmt.Errorf("images of %d×%d×%d, the configuration says %d×%d×%d", im.Height, im.Width, im.Channels, mc.Height, mc.Width, mc.Channels)
			}
			return asBottom(NewCNNBottom(mc))
		},
		NewTop: func(s Settings, _ *data.Features) (Top, error) { return asTop(NewCNNTop(s.CNN)) },
		CutDim: func(s Settings) int { return s.CNN.CutDim() },
	})
}
