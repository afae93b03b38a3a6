package netrun

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestColludingPassivesPoolOffline runs two passive parties over loopback
// and then has them collude after the run, as `attack completion --run A
// --colluder B` does: each passive directory reloads its rows and bottom
// (LoadPassive), the rows agree, and model completion on the pooled
// bottoms — with the known rows the in-process run drew — gives exactly
// the in-process run's figure for the pair at its last evaluation. A
// passive directory of another run is refused for holding other rows.
func TestColludingPassivesPoolOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties and the in-process run")
	}
	root := t.TempDir()
	path := synthFile(t, 900)
	base := threePartyBase(path, filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm", "completion_supervised"}
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pair, ok := want.Parties["inf+noise"].EvalAttacksFinal["completion_supervised/auc"]
	if !ok {
		t.Fatalf("the in-process run recorded no completion figure for the pair: %+v", want.Parties)
	}
	act, pas := threePartyConfigs(base, root, "")
	_, perrs, err := runThree(t, act, pas)
	if err = errors.Join(append(perrs, err)...); err != nil {
		t.Fatal(err)
	}
	var cs []completion.Colluder
	var names []string
	var splits []*data.Split
	for _, p := range pas {
		cfg, s, b, err := LoadPassive(p.Out)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if cfg.Name != p.Name {
			t.Fatalf("directory %s holds party %q, want %q", p.Out, cfg.Name, p.Name)
		}
		names, splits = append(names, p.Name), append(splits, s)
		cs = append(cs, completion.Colluder{Name: p.Name, Train: s.Train.X, Test: s.Test.X, Bottom: b})
	}
	if err := completion.SameRows(names, splits); err != nil {
		t.Fatal(err)
	}
	// The in-process run's attacker: known rows drawn from its labels with
	// its seed. Its training split leaves the validation rows out; the
	// passives' holds them (only the active knows which they are), so the
	// rows are carried over by ID.
	cfg, ref, err := rundir.LoadRun(base.Out)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := completion.Pick(ref.Train.Labels, cfg.Known(), completion.DefaultUnlabelled, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	at, err := completion.New([]string{"completion_supervised"}, byID(t, rows, ref.Train.IDs, splits[0].Train.IDs), cfg.EvalBatch, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	bs, train, test := completion.Pool(cs)
	res, err := at.RunPooled(bs, train, test, ref.Test.Labels)
	if err != nil {
		t.Fatal(err)
	}
	if got := res["completion_supervised"].AUC; got != pair {
		t.Fatalf("pooled completion over the two passive directories: AUC %v, the in-process run recorded %v for inf+noise", got, pair)
	}
	other := *splits[1]
	other.Test = &data.Dataset{IDs: append([]uint64{^uint64(0)}, splits[1].Test.IDs[1:]...)}
	if err := completion.SameRows(names, []*data.Split{splits[0], &other}); !errors.Is(err, completion.ErrRowsDiffer) {
		t.Fatalf("passives with other test rows: %v, want ErrRowsDiffer", err)
	}
	t.Logf("pooled completion AUC %.4f in both modes", pair)
}

// byID returns rows, indices into the training rows with IDs from, as
// indices into the training rows with IDs to.
func byID(t *testing.T, rows *completion.Rows, from, to []uint64) *completion.Rows {
	t.Helper()
	at := make(map[uint64]int, len(to))
	for i, id := range to {
		at[id] = i
	}
	move := func(idx []int) []int {
		out := make([]int, len(idx))
		for i, r := range idx {
			j, ok := at[from[r]]
			if !ok {
				t.Fatalf("training row %d (ID %d) is not a training row of the passive", r, from[r])
			}
			out[i] = j
		}
		return out
	}
	return &completion.Rows{Known: move(rows.Known), KnownLabels: rows.KnownLabels, Unlabelled: move(rows.Unlabelled)}
}
