package model

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// TestKinds checks the built-in model kinds against what each is: the
// tables' deep models (wdl with a wide part, mlp without) are served, the
// CNN reads images and is not; a table model's cut embedding has the width
// of layer Cut, which CutDim gives; each half refuses the other data.
func TestKinds(t *testing.T) {
	for _, c := range []struct {
		name                 string
		images, wide, served bool
	}{{"cnn", true, false, false}, {"mlp", false, false, true}, {"wdl", false, true, true}} {
		k, ok := LookupKind(c.name)
		if !ok {
			t.Fatalf("model kind %s is not registered", c.name)
		}
		if k.Images != c.images || k.Wide != c.wide || k.Served != c.served {
			t.Errorf("%s: images %v wide %v served %v, want %v %v %v", c.name, k.Images, k.Wide, k.Served, c.images, c.wide, c.served)
		}
	}
	x := &data.Features{Rows: 3, NumCat: 1, Cat: []int32{0, 1, 2}, Cardinality: []int{3}, CatNames: []string{"c"},
		NumDense: 1, Dense: []float32{0, 0.5, 1}, DenseNames: []string{"d"}}
	s := Settings{Table: Config{Widths: []int{8, 5, 4}, Cut: 2, EmbDim: 2, LR: 1e-3, Seed: 1}}
	for _, name := range []string{"wdl", "mlp"} {
		k, _ := LookupKind(name)
		if got := k.CutDim(s); got != 5 {
			t.Errorf("%s: CutDim = %d, want 5 (layer 2 of 8, 5, 4)", name, got)
		}
		b, err := k.NewBottom(s, x)
		if err != nil {
			t.Fatal(err)
		}
		var batch data.Batch
		x.Gather([]int{0, 1, 2}, &batch)
		e, err := b.Forward(&batch)
		if err != nil {
			t.Fatal(err)
		}
		if e.Rows != 3 || e.Cols != 5 {
			t.Errorf("%s: cut embedding %d×%d, want 3×5", name, e.Rows, e.Cols)
		}
		img := &data.Features{Rows: 1, NumDense: 4, Dense: make([]float32, 4), Image: &data.ImageShape{Height: 2, Width: 2, Channels: 1}}
		if _, err := k.NewBottom(s, img); err == nil || !strings.Contains(err.Error(), "the images need model cnn") {
			t.Errorf("%s over images: got %v, want a pointer to model cnn", name, err)
		}
	}
	wdl, _ := LookupKind("wdl")
	if _, err := wdl.NewTop(s, nil); err == nil || !strings.Contains(err.Error(), "wide part needs") {
		t.Errorf("wdl's top without the active's features: got %v, want a refusal", err)
	}
	cnn, _ := LookupKind("cnn")
	if _, err := cnn.NewBottom(Settings{}, x); err == nil || !strings.Contains(err.Error(), "a table of 2 columns") {
		t.Errorf("cnn over a table: got %v, want a refusal naming its 2 columns", err)
	}
	if s.Table.Cut = 4; (Kind{CutDim: tableCutDim}).CutDim(s) != 0 {
		t.Error("a cut past the last layer: want CutDim 0")
	}
}

// TestRegisterKindRefuses checks the registry's refusals.
func TestRegisterKindRefuses(t *testing.T) {
	wdl, _ := LookupKind("wdl")
	for _, c := range []struct {
		name string
		k    Kind
		want string
	}{
		{"taken", wdl, `"wdl" registered twice`},
		{"no constructor", Kind{Name: "toy_kind"}, "want a name, NewBottom"},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, c.want) {
					t.Errorf("%s: RegisterKind panicked with %q, want %q", c.name, msg, c.want)
				}
			}()
			RegisterKind(c.k)
		}()
	}
	if _, ok := LookupKind("toy_kind"); ok {
		t.Error("a refused kind entered the registry")
	}
}
