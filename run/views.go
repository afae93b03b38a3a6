package run

import (
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/rundir"
)

// baselineOwn names the baseline's columns under a vertical split, as a
// two-party run's active party names them.
const baselineOwn = rundir.OwnColumns

// view is one party's rows of the run: the training (validation held
// out), validation and test splits with that party's columns. Both views
// hold the labels (the passive's are read only by the evaluation side:
// model completion); the passive party is handed IDs and features only.
type view struct {
	train, val, test *data.Dataset
	info             data.Info
}

// partyViews returns the passive's and the active's views of split
// (train: its training rows without the validation rows val) under the
// configuration's vertical split. Without one both views share every
// column and no feature is copied.
func partyViews(cfg *config.Config, split *data.Split, train, val *data.Dataset) (pv, av *view, err error) {
	pv, av = &view{info: split.Info}, &view{info: split.Info}
	for _, d := range []struct {
		src    *data.Dataset
		pd, ad **data.Dataset
	}{{train, &pv.train, &av.train}, {val, &pv.val, &av.val}, {split.Test, &pv.test, &av.test}} {
		if d.src == nil {
			continue
		}
		px, ax, err := cfg.SplitFeatures(d.src.X)
		if err != nil {
			return nil, nil, err
		}
		*d.pd = &data.Dataset{IDs: d.src.IDs, X: px, Labels: d.src.Labels}
		*d.ad = &data.Dataset{IDs: d.src.IDs, X: ax, Labels: d.src.Labels}
	}
	return pv, av, nil
}

// split returns the view's training and test splits.
func (v *view) split() *data.Split { return &data.Split{Train: v.train, Test: v.test, Info: v.info} }

// evalRows returns the rows of one evaluation round: the validation
// rows, then the test rows.
func (v *view) evalRows() (*data.Dataset, error) {
	if v.val == nil || len(v.val.IDs) == 0 {
		return v.test, nil
	}
	return data.Concat(v.val, v.test)
}
