package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/inproc"
	"gopkg.in/yaml.v3"
)

// Options are the parts of a run that are not configuration: where
// progress goes.
type Options struct {
	// Log receives plain progress lines (nil: none).
	Log io.Writer
	// Progress, when set, is told about every batch (for a progress bar).
	Progress func(p Progress)
	// OnBatch, when set, is called with every batches.jsonl record after
	// it is written (its Leak map is reused afterwards: copy what you keep).
	OnBatch func(BatchRecord)
	// OnEval, when set, is called with every eval.jsonl record after it
	// is written.
	OnEval func(EvalRecord)
}

// Progress is a snapshot handed to Options.Progress after every batch.
type Progress struct {
	Step, Total  int64
	Loss         float64
	ExamplesPerS float64
	// LeakKey and Leak are one leak AUC of the last batch (norm/cut when
	// audited, else the first key in sorted order); Leak is nil when the
	// AUC is undefined.
	LeakKey string
	Leak    *float64
}

// Train runs one in-process split-training run as cfg describes, writing
// the run directory cfg.Out, and returns its summary.
func Train(ctx context.Context, cfg Config, opt Options) (*Summary, error) {
	cfg.Layers = slices.Clone(cfg.Layers)
	cfg.Resolve()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	resolved, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(cfg.Out, "config.yaml"), resolved); err != nil {
		return nil, err
	}
	split, err := loadData(&cfg)
	if err != nil {
		return nil, err
	}
	canonicalOrder(split) // canonical.go
	if err := checkClasses(split); err != nil {
		return nil, err
	}
	if split.Encoding != nil {
		// Written now and dropped: a large vocabulary is not kept in
		// memory through training.
		if err := data.SaveEncoding(filepath.Join(cfg.Out, EncodingFile), split.Encoding); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		split.Encoding = nil
	}
	logf(opt.Log, "data: %d training rows (%.1f%% positive), %d test rows", len(split.Train.IDs),
		100*posRate(split.Train.Labels), len(split.Test.IDs))
	return trainSplit(ctx, cfg, split, opt)
}

func trainSplit(ctx context.Context, cfg Config, split *data.Split, opt Options) (*Summary, error) {
	bottom, top, wide, err := buildModels(&cfg, split.Train.X)
	if err != nil {
		return nil, err
	}
	sched, err := schedule.New(len(split.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return nil, err
	}
	protector, dcor, lossLabels, err := buildProtection(&cfg, split.Train)
	if err != nil {
		return nil, err
	}
	aud, err := audit.New(expandAttacks(cfg.Attacks), cfg.PositivesMinority, cfg.Seed)
	if err != nil {
		return nil, err
	}
	rec, err := newRecorder(cfg, split, aud, opt)
	if err != nil {
		return nil, err
	}
	defer rec.close()

	act, err := active.New(top, split.Train, split.Test, sched, bottom.CutDim(), active.Config{
		Protector: protector, DCor: dcor, TrainLabels: lossLabels, Wide: wide, ACEBins: cfg.ACEBins, Seed: cfg.Seed,
		Observer: rec.activeBatch, EvalObserver: rec.eval,
	})
	if err != nil {
		return nil, err
	}
	pas, err := passive.New(bottom,
		passive.Split{IDs: split.Train.IDs, X: split.Train.X},
		passive.Split{IDs: split.Test.IDs, X: split.Test.X},
		sched, passive.Config{Epochs: cfg.Epochs, MaxSteps: cfg.MaxSteps, EvalEvery: cfg.EvalEvery, EvalBatch: cfg.EvalBatch,
			Observer: func(ob *passive.Observation) error { return rec.passiveBatch(ob, bottom) }})
	if err != nil {
		return nil, err
	}
	rec.total = pas.TotalSteps()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pConn, aConn := inproc.Pipe()
	activeErr := make(chan error, 1)
	go func() {
		err := act.Serve(ctx, aConn)
		if err != nil {
			cancel()
		}
		activeErr <- err
	}()
	start := time.Now()
	perr := pas.Run(ctx, pConn)
	pConn.Close()
	aerr := <-activeErr
	if aerr != nil {
		return nil, aerr
	}
	if perr != nil {
		if ctx.Err() != nil && rec.err != nil {
			return nil, rec.err
		}
		return nil, perr
	}
	elapsed := time.Since(start)
	if err := saveModels(cfg.Out, bottom, top); err != nil {
		return nil, err
	}
	return rec.finish(elapsed, pas.Step())
}

// Files of a run directory that serve trained models (see README.md): the
// encoding of the training data (data.SaveEncoding) and the final models
// (model Save: parameters and optimiser state).
const (
	EncodingFile    = "encoding"
	BottomModelFile = "bottom.model"
	TopModelFile    = "top.model"
)

// saveModels writes the final bottom and top models into dir, each to a
// temporary file renamed into place.
func saveModels(dir string, bottom model.Bottom, top model.Top) error {
	for _, m := range []struct {
		file string
		save func(io.Writer) error
	}{{BottomModelFile, bottom.Save}, {TopModelFile, top.Save}} {
		var b bytes.Buffer
		if err := m.save(&b); err != nil {
			return fmt.Errorf("run: saving %s: %w", m.file, err)
		}
		if err := writeFileAtomic(filepath.Join(dir, m.file), b.Bytes()); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	return nil
}

// loadData reads the (resolved) configuration's data: an image set, a
// table, or synthetic Criteo-shaped rows.
func loadData(cfg *Config) (*data.Split, error) {
	switch {
	case cfg.Format == data.FormatFashionMNIST:
		return data.LoadFashionMNIST(cfg.Data, imageOptions(cfg))
	case cfg.Format == data.FormatISIC:
		return data.LoadISIC(cfg.Data, imageOptions(cfg))
	case cfg.Data == "":
		return data.Generate(cfg.SynthRows, cfg.SynthPosRate, cfg.Seed, dataOptions(cfg))
	}
	return data.Load(cfg.Data, dataOptions(cfg))
}

// imageOptions maps the run's image settings to the loaders' options.
func imageOptions(cfg *Config) data.ImageOptions {
	return data.ImageOptions{
		PositiveClass: cfg.PositiveClass, PosRate: cfg.PosRate,
		Size: cfg.ImageSize, Pad: cfg.ImagePad, Channels: cfg.ImageChannels,
		Seed: cfg.Seed, NegPerPos: cfg.NegPerPos, TestFrac: cfg.TestFrac,
	}
}

func dataOptions(cfg *Config) data.Options {
	return data.Options{
		Format: cfg.Format, LabelCol: cfg.Label, Positive: cfg.Positive, IDCol: cfg.IDCol,
		Sample: cfg.Sample, TestFrac: cfg.TestFrac, Seed: cfg.Seed,
		HashBuckets: cfg.HashBuckets, SkipBadRows: cfg.SkipBadRows,
	}
}

// checkClasses refuses, before any training, a split whose AUCs would be
// undefined: a test (or training) split with a single class.
func checkClasses(split *data.Split) error {
	for _, part := range []struct {
		name string
		d    *data.Dataset
	}{{"training", split.Train}, {"test", split.Test}} {
		n := len(part.d.Labels)
		pos := int(posRate(part.d.Labels)*float64(n) + 0.5)
		if n == 0 || pos == 0 || pos == n {
			class := "negative"
			if pos == n && n > 0 {
				class = "positive"
			}
			return fmt.Errorf("run: the %s split's %d rows are all %s, so its AUC is undefined; use more data or a larger --test-frac", part.name, n, class)
		}
	}
	return nil
}

func posRate(labels []uint8) float64 {
	s := 0
	for _, y := range labels {
		s += int(y)
	}
	return float64(s) / float64(max(len(labels), 1))
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}

// engineName names the matrix-product engine in use.
func engineName() string { return tensor.Default.Name() }
