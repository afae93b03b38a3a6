package model

import (
	"fmt"

	"github.com/splitguard/splitguard/data"
)

func init() {
	RegisterKind(Kind{Name: "wdl", Help: "Wide&Deep: the passive's deep layers up to the cut; the active's deep layers after it and a wide part over its own table columns",
		Wide: true, Served: true,
		NewBottom: tableBottom("wdl"),
		NewTop: func(s Settings, x *data.Features) (Top, error) {
			// x is the active party's training rows: the wide part's
			// standardisation is theirs (a loaded model brings its own).
			if x == nil || x.Image != nil {
				return nil, fmt.Errorf("model wdl: the wide part needs the active party's table features")
			}
			sc := SchemaOf(x)
			t, err := NewTop(s.Table, &sc)
			if err == nil && s.Table.WideStandardise && x.NumDense > 0 {
				t.wideScale = newWideScale(x)
			}
			return asTop(t, err)
		},
		CutDim: tableCutDim,
	})
}
