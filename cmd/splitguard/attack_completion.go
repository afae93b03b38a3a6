package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/netrun"
	"github.com/splitguard/splitguard/rundir"
)

// completionOptions are the flags of `attack completion`.
type completionOptions struct {
	run, labels, truth, out  string
	parties, colluders       []string
	known, unlabelled, draws int
	tunedBudget              int
	attacks                  []string
	seed                     uint64
	seedSet                  bool
}

func newAttackCompletionCmd() *cobra.Command {
	var o completionOptions
	cmd := &cobra.Command{
		Use:   "completion --run DIR [--known-labels N | --labels FILE]",
		Short: "Passive model completion on a finished run's trained bottom model",
		Long: `Model completion (Fu et al., USENIX Security 2022): the passive party keeps its
trained bottom model, its features and the labels of a few training rows, fits
a small head on the bottom's cut output and labels the test split with it.
No gradient protection acts on this: it attacks the trained model.

An in-process run directory (splitguard train): the data is reloaded with its
labels, --known-labels N rows (half of each class) are drawn from the training
split by --seed, --unlabelled more training rows are used without labels, and
every test row is scored against its true label.

An in-process run with several passive parties: --party NAME attacks that
party's bottom over its own columns; --party A,B (two or more) attacks the
colluding subset: the parties pool their bottoms' cut outputs side by side and
the attacker's head reads them together (the run's "A+B" figure).

A two-party run's passive directory (splitguard passive): the passive holds no
labels, so the attacker's known labels come from --labels FILE (lines
"id,label", label 0 or 1; training-row IDs); --truth FILE (the same form) gives
the true test labels to score against, if the experimenter has them. Colluding
passive parties of a two-process run with several passives: --colluder DIR
(repeated) adds another passive party's directory; the parties must hold the
same aligned rows, and their bottoms' outputs are pooled as above.

Prints one JSON line per attack and draw
  {"attack": …, "seed": …, "known_labels": …, "unlabelled": …, "test_rows": …,
   "auc": …, "accuracy": …, "prior": …, "model_test_auc": …}
(model_test_auc: the run's own final test AUC from summary.json, when there is
one). Which rows are known matters: with --draws K the attack is repeated
with K seeds and a last line per attack gives {"attack", "draws", "auc_mean",
"auc_min", "auc_max", "accuracy_mean"}. --out FILE writes "id,ATTACK…" with
each attack's probability per test row (of the last draw). --tuned-budget M
adds each attack's tuned attacker, ATTACK_tuned, whose line also gives its
choice ("tuned"; docs/methods/tuned.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			if cmd.Flags().Changed("known-labels") && o.labels != "" {
				return errors.New("attack completion: give --known-labels or --labels, not both")
			}
			return attackCompletion(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.run, "run", "", "run directory: an in-process run, or a two-party run's passive directory (with --labels)")
	f.IntVar(&o.known, "known-labels", 40, "known training labels drawn from an in-process run, half of each class")
	f.StringSliceVar(&o.parties, "party", nil, "in-process run with several passive parties: the passive party whose bottom to attack (its columns, its bottom model), or two or more colluding parties whose bottoms are pooled")
	f.StringArrayVar(&o.colluders, "colluder", nil, "a two-process run's passive directory (with --labels): another colluding passive party's directory, whose bottom is pooled with --run's (repeat for more)")
	f.StringVar(&o.labels, "labels", "", `the attacker's known labels, lines "id,label" (a two-party passive directory)`)
	f.StringVar(&o.truth, "truth", "", `true test labels, lines "id,label", to score a two-party passive directory against`)
	f.IntVar(&o.unlabelled, "unlabelled", completion.DefaultUnlabelled, "unlabelled training rows the attacker uses")
	f.StringSliceVar(&o.attacks, "attacks", attack.ModelNames(attack.Names()), "model attacks to run")
	f.StringVar(&o.out, "out", "", `write "id,ATTACK…" probabilities of the test rows here`)
	f.Uint64Var(&o.seed, "seed", 0, "seed of the choice of rows and of the heads (default: the run's seed)")
	f.IntVar(&o.draws, "draws", 1, "repeat with seeds seed, seed+1, … (new known and unlabelled rows, new heads) and summarise")
	f.IntVar(&o.tunedBudget, "tuned-budget", 0, "also run each attack's tuned attacker (ATTACK_tuned: its parameters chosen by cross-validation on the known labels) with this many candidate settings (0: off)")
	return cmd
}

// completionLine is one line of `attack completion`'s output.
type completionLine struct {
	Attack       string   `json:"attack"`
	Seed         uint64   `json:"seed"`
	KnownLabels  int      `json:"known_labels"`
	Unlabelled   int      `json:"unlabelled"`
	TestRows     int      `json:"test_rows"`
	AUC          *float64 `json:"auc,omitempty"`
	Accuracy     *float64 `json:"accuracy,omitempty"`
	Prior        *float64 `json:"prior,omitempty"`
	ModelTestAUC *float64 `json:"model_test_auc,omitempty"`
	// Tuned is a tuned attacker's choice (--tuned-budget).
	Tuned string `json:"tuned,omitempty"`
}

func attackCompletion(w io.Writer, o completionOptions) error {
	fail := func(err error) error { return fmt.Errorf("attack completion: %w", err) }
	if err := o.check(); err != nil {
		return fail(err)
	}
	var t *completionTarget
	var err error
	if o.labels == "" {
		t, err = loadRunTarget(o)
	} else {
		t, err = loadPassiveTarget(o)
	}
	if err != nil {
		return fail(err)
	}
	if !o.seedSet {
		o.seed = t.seed
	}
	at, all, err := t.draw(w, o)
	if err != nil {
		return err
	}
	if o.draws > 1 && t.testY != nil {
		enc := json.NewEncoder(w)
		for _, n := range at.Names() {
			if err := enc.Encode(summariseDraws(n, all[n])); err != nil {
				return err
			}
		}
	}
	if o.out != "" {
		return writeCompletionScores(o.out, t.split.Test.IDs, at)
	}
	return nil
}

// check refuses options that do not go together or are out of range.
func (o completionOptions) check() error {
	if o.run == "" {
		return errors.New("--run is required")
	}
	if len(o.attacks) == 0 || len(attack.ModelNames(o.attacks)) != len(o.attacks) {
		return fmt.Errorf("--attacks %v: want model attacks (%v)", o.attacks, attack.ModelNames(attack.Names()))
	}
	if o.unlabelled < 0 {
		return fmt.Errorf("--unlabelled %d, want ≥ 0", o.unlabelled)
	}
	if o.draws < 1 {
		return fmt.Errorf("--draws %d, want ≥ 1", o.draws)
	}
	if len(o.parties) > 0 && o.labels != "" {
		return errors.New("--party names passive parties of an in-process run; a two-party passive directory (--labels) is one party already (add colluders with --colluder)")
	}
	if len(o.colluders) > 0 && o.labels == "" {
		return errors.New("--colluder adds a passive party's directory of a two-process run (with --labels); for an in-process run name the colluding parties with --party A,B")
	}
	if o.tunedBudget < 0 {
		return fmt.Errorf("--tuned-budget %d, want ≥ 1 (or 0: off)", o.tunedBudget)
	}
	return nil
}

// completionTarget is what `attack completion` attacks: the split with
// the attacker's features, one bottom or a colluding pool, how the known
// rows are picked for a seed, the true test labels to score against (nil:
// none), and the run's seed and evaluation batch.
type completionTarget struct {
	split    *data.Split
	pool     []completion.Colluder // two or more: a colluding subset
	bottom   model.Bottom
	pick     func(seed uint64) (*completion.Rows, error)
	testY    []uint8
	seed     uint64
	evalSize int
}

// loadRunTarget loads an in-process run directory: its data with the
// labels, the bottom of one passive party (--party) or the pooled
// bottoms of colluding parties; the known rows are drawn from the
// training labels.
func loadRunTarget(o completionOptions) (*completionTarget, error) {
	t := &completionTarget{}
	var cfg *config.Config
	var err error
	if len(o.parties) > 1 {
		cfg, t.split, t.pool, err = completion.LoadColludersRun(o.run, o.parties)
	} else {
		cfg, t.split, t.bottom, err = completion.LoadPartyRun(o.run, firstOr(o.parties, ""))
		if errors.Is(err, completion.ErrSeveralParties) {
			err = fmt.Errorf("%w: name the party whose bottom to attack with --party (or colluding parties: --party A,B)", err)
		}
	}
	if err != nil {
		return nil, err
	}
	t.seed, t.evalSize, t.testY = cfg.Seed, cfg.EvalBatch, t.split.Test.Labels
	t.pick = func(seed uint64) (*completion.Rows, error) {
		return completion.Pick(t.split.Train.Labels, o.known, o.unlabelled, seed)
	}
	return t, nil
}

// loadPassiveTarget loads a two-process run's passive directory (and its
// colluders'): the known labels come from --labels, the true test labels,
// if any, from --truth.
func loadPassiveTarget(o completionOptions) (*completionTarget, error) {
	cfg, s, b, err := netrun.LoadPassive(o.run)
	if err != nil {
		return nil, err
	}
	t := &completionTarget{split: s, bottom: b, seed: cfg.Seed, evalSize: cfg.EvalBatch}
	if !o.seedSet {
		o.seed = t.seed // the first draw's, which alone reports ignored IDs
	}
	if len(o.colluders) > 0 {
		if t.pool, err = loadNetColluders(o.run, o.colluders, s, b); err != nil {
			return nil, err
		}
	}
	known, err := readLabelFile(o.labels)
	if err != nil {
		return nil, err
	}
	t.pick = func(seed uint64) (*completion.Rows, error) {
		rows, ignored, err := completion.FromLabels(s.Train.IDs, known, o.unlabelled, seed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.labels, err)
		}
		if ignored > 0 && seed == o.seed {
			fmt.Fprintf(os.Stderr, "attack completion: %d IDs of %s are not training rows of %s; ignored\n", ignored, o.labels, o.run)
		}
		return rows, nil
	}
	if o.truth != "" {
		if t.testY, err = truthLabels(o.truth, s.Test.IDs); err != nil {
			return nil, err
		}
	} else if o.out == "" {
		return nil, errors.New("without --truth there is nothing to score against: give --truth or --out")
	}
	return t, nil
}

// draw runs the attacks once per draw (seeds o.seed, o.seed+1, …: new
// known and unlabelled rows, new heads), writing a line per attack and
// draw to w, and returns the attacker (its scores are the last draw's)
// and every draw's results per attack.
func (t *completionTarget) draw(w io.Writer, o completionOptions) (*completion.Attacker, map[string][]completion.Result, error) {
	fail := func(err error) error { return fmt.Errorf("attack completion: %w", err) }
	modelAUC := summaryTestAUC(o.run)
	enc := json.NewEncoder(w)
	var at *completion.Attacker
	all := map[string][]completion.Result{}
	for d := range o.draws {
		s := o.seed + uint64(d)
		rows, err := t.pick(s)
		if err != nil {
			return nil, nil, fail(err)
		}
		if at == nil {
			if at, err = newCompletionAttacker(o, rows, t.evalSize, s); err != nil {
				return nil, nil, fail(err)
			}
		} else {
			at.Redraw(rows, s)
		}
		res, err := t.run(at)
		if err != nil {
			return nil, nil, fail(err)
		}
		for _, n := range at.Names() {
			line := completionLine{Attack: n, Seed: s, KnownLabels: len(rows.Known), Unlabelled: len(rows.Unlabelled),
				TestRows: len(t.split.Test.IDs), ModelTestAUC: modelAUC, Tuned: at.TunedChoices()[n]}
			if r, ok := res[n]; ok {
				line.AUC, line.Accuracy, line.Prior = &r.AUC, &r.Accuracy, &r.Prior
				all[n] = append(all[n], r)
			}
			if err := enc.Encode(line); err != nil {
				return nil, nil, err
			}
		}
	}
	return at, all, nil
}

// newCompletionAttacker builds the attacks of o on rows, tuned when
// --tuned-budget asks.
func newCompletionAttacker(o completionOptions, rows *completion.Rows, evalSize int, seed uint64) (*completion.Attacker, error) {
	at, err := completion.New(o.attacks, rows, evalSize, seed)
	if err != nil {
		return nil, err
	}
	if o.tunedBudget > 0 {
		if err := at.Tune(o.tunedBudget); err != nil {
			return nil, err
		}
	}
	return at, nil
}

// run runs the attacks of at on the target's bottom (or its pool).
func (t *completionTarget) run(at *completion.Attacker) (map[string]completion.Result, error) {
	if len(t.pool) > 0 {
		bs, train, test := completion.Pool(t.pool)
		return at.RunPooled(bs, train, test, t.testY)
	}
	return at.Run(t.bottom, t.split.Train.X, t.split.Test.X, t.testY)
}

// drawSummary is the last line per attack of `attack completion --draws`.
type drawSummary struct {
	Attack       string  `json:"attack"`
	Draws        int     `json:"draws"`
	AUCMean      float64 `json:"auc_mean"`
	AUCMin       float64 `json:"auc_min"`
	AUCMax       float64 `json:"auc_max"`
	AccuracyMean float64 `json:"accuracy_mean"`
}

func summariseDraws(name string, rs []completion.Result) drawSummary {
	s := drawSummary{Attack: name, Draws: len(rs), AUCMin: math.Inf(1), AUCMax: math.Inf(-1)}
	for _, r := range rs {
		s.AUCMean += r.AUC / float64(len(rs))
		s.AccuracyMean += r.Accuracy / float64(len(rs))
		s.AUCMin, s.AUCMax = min(s.AUCMin, r.AUC), max(s.AUCMax, r.AUC)
	}
	return s
}

func readLabelFile(path string) (map[uint64]uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return completion.ReadLabels(f, path)
}

// truthLabels reads the true labels of the test rows ids from path; every
// test row needs one.
func truthLabels(path string, ids []uint64) ([]uint8, error) {
	byID, err := readLabelFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]uint8, len(ids))
	for i, id := range ids {
		y, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("--truth %s has no label for test row ID %d", path, id)
		}
		out[i] = y
	}
	return out, nil
}

// summaryTestAUC returns the run's final test AUC from its summary.json,
// or nil when it has none (a passive directory).
func summaryTestAUC(dir string) *float64 {
	raw, err := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err != nil {
		return nil
	}
	var s rundir.Summary
	if json.Unmarshal(raw, &s) != nil || s.TestAUCFinal == 0 {
		return nil
	}
	return &s.TestAUCFinal
}

// writeCompletionScores writes "id,ATTACK…" with each attack's
// probability per test row.
func writeCompletionScores(path string, ids []uint64, at *completion.Attacker) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		b := []byte("id")
		for _, n := range at.Names() {
			b = append(append(b, ','), n...)
		}
		b = append(b, '\n')
		for i, id := range ids {
			b = strconv.AppendUint(b, id, 10)
			for _, n := range at.Names() {
				b = append(b, ',')
				b = strconv.AppendFloat(b, at.Scores(n)[i], 'g', 8, 64)
			}
			b = append(b, '\n')
			if len(b) > 1<<16 {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
		_, err := w.Write(b)
		return err
	})
}
