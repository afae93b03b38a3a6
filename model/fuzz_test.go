package model

import (
	"bytes"
	"io"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the model checkpoint loader of a small
// MLP: an error or a model whose saved bytes load and save again to the
// same bytes (Load resets the embeddings' scratch slot, so the first save
// may differ from the input there).
func FuzzLoad(f *testing.F) {
	s := Schema{Cardinality: []int{3, 4}, NumDense: 2}
	bot, top, err := NewMLP(Config{Widths: []int{4, 3}, Cut: 1, EmbDim: 2, Seed: 1}, s)
	if err != nil {
		f.Fatal(err)
	}
	var b, tp bytes.Buffer
	if err := bot.Save(&b); err != nil {
		f.Fatal(err)
	}
	if err := top.Save(&tp); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes(), false)
	f.Add(tp.Bytes(), true)
	f.Fuzz(func(t *testing.T, in []byte, isTop bool) {
		bot, top, err := NewMLP(Config{Widths: []int{4, 3}, Cut: 1, EmbDim: 2, Seed: 1}, s)
		if err != nil {
			t.Fatal(err)
		}
		m := struct {
			Load func(r io.Reader) error
			Save func(w io.Writer) error
		}{bot.Load, bot.Save}
		if isTop {
			m.Load, m.Save = top.Load, top.Save
		}
		if m.Load(bytes.NewReader(in)) != nil {
			return
		}
		var once, twice bytes.Buffer
		if err := m.Save(&once); err != nil {
			t.Fatal(err)
		}
		if err := m.Load(bytes.NewReader(once.Bytes())); err != nil {
			t.Fatalf("a saved model does not load: %v", err)
		}
		if err := m.Save(&twice); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("save, load, save changed the bytes")
		}
	})
}
