package dump

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbinet/npyio"
)

func TestReadClassesNPY(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := npyio.Write(f, v); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	want := []uint8{3, 0, 9, 255}
	for name, v := range map[string]any{"u1": []uint8{3, 0, 9, 255}, "i8": []int64{3, 0, 9, 255}, "i4": []int32{3, 0, 9, 255}, "u2": []uint16{3, 0, 9, 255}} {
		got, err := ReadClassesNPY(write(name+".npy", v))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}
	for name, v := range map[string]any{"neg": []int64{1, -1}, "big": []int32{256}, "float": []float64{1, 2}} {
		if _, err := ReadClassesNPY(write(name+".npy", v)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
