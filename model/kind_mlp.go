package model

import "github.com/splitguard/splitguard/data"

func init() {
	RegisterKind(Kind{Name: "mlp", Help: "MLP: Wide&Deep's deep layers split at the cut, without the wide part",
		Served:    true,
		NewBottom: tableBottom("mlp"),
		NewTop:    func(s Settings, _ *data.Features) (Top, error) { return asTop(NewTop(s.Table, nil)) },
		CutDim:    tableCutDim,
	})
}
