package netrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// legacyEncodingFile is the name, in the run directory of a party trained
// before rundir.EncodingFile was written, of the summary of how its data file
// was encoded (see encoding). Such a run can only score files whose
// encoding happens to match; it is checked, not applied.
const legacyEncodingFile = "encoding.json"

// encoding is the legacy summary of how a party's features were encoded for training: per
// column its kind and, for categorical columns, the number of ids, for
// dense columns the training split's minimum and maximum used for scaling.
// A model only makes sense on features encoded the same way, so scoring
// compares the encoding of the file it scores with this record.
type encoding struct {
	HashBuckets int              `json:"hash_buckets"`
	MinCount    int              `json:"min_count"`
	LogDense    bool             `json:"log_dense"`
	Columns     []encodingColumn `json:"columns"`
}

type encodingColumn struct {
	Name        string  `json:"name"`
	Kind        string  `json:"kind"`
	Cardinality int     `json:"cardinality,omitempty"`
	Min         float64 `json:"min,omitempty"`
	Max         float64 `json:"max,omitempty"`
}

func encodingOf(info *data.Info) encoding {
	e := encoding{HashBuckets: info.HashBuckets, MinCount: info.MinCount, LogDense: info.LogDense}
	for _, c := range info.Columns {
		switch c.Kind {
		case data.KindCategorical:
			e.Columns = append(e.Columns, encodingColumn{Name: c.Name, Kind: "categorical", Cardinality: c.Cardinality})
		case data.KindDense:
			e.Columns = append(e.Columns, encodingColumn{Name: c.Name, Kind: "dense", Min: c.Min, Max: c.Max})
		}
	}
	return e
}

// diff names the first difference between e (the file being scored) and
// the training record t, or returns "".
func (e encoding) diff(t encoding) string {
	if e.HashBuckets != t.HashBuckets || e.MinCount != t.MinCount || e.LogDense != t.LogDense {
		return fmt.Sprintf("hash buckets %d, min count %d, log dense %v; training used %d, %d, %v",
			e.HashBuckets, e.MinCount, e.LogDense, t.HashBuckets, t.MinCount, t.LogDense)
	}
	if len(e.Columns) != len(t.Columns) {
		return fmt.Sprintf("%d feature columns, training had %d", len(e.Columns), len(t.Columns))
	}
	for i, c := range e.Columns {
		if c != t.Columns[i] {
			return fmt.Sprintf("column %d is %+v, in training %+v", i+1, c, t.Columns[i])
		}
	}
	return ""
}

// checkEncoding compares the encoding of a loaded file with the legacy
// training record in dir. A missing record is reported as ok=false without
// an error.
func checkEncoding(dir string, info *data.Info) (ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, legacyEncodingFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var t encoding
	if err := json.Unmarshal(raw, &t); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(dir, legacyEncodingFile), err)
	}
	if d := encodingOf(info).diff(t); d != "" {
		return false, config.Keyed(fmt.Errorf("the data file %s is not encoded as the training data was (%s): the model cannot score it; "+
			"score rows of a file whose encoding matches (the training file with the training options, or with hashed categories, key hash_buckets, "+
			"a file whose dense columns have the same training-split range)", info.Path, d), "hash_buckets")
	}
	return true, nil
}
