package data

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestNoImageDecoderInTrainingPackages checks the import graph: the
// packages that train and hold data in memory link no image decoder (the
// readers live in data/images and register themselves).
func TestNoImageDecoderInTrainingPackages(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	const mod = "github.com/splitguard/splitguard/"
	for _, pkg := range []string{"data", "model", "party/active", "party/passive"} {
		out, err := exec.Command(goTool, "list", "-deps", mod+pkg).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -deps %s: %v: %s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "image" || strings.HasPrefix(dep, "image/") || strings.HasPrefix(dep, "golang.org/x/image") || dep == mod+"data/images" {
				t.Errorf("%s depends on %s; image decoding belongs in data/images", pkg, dep)
			}
		}
	}
}

// toyReader returns a one-row split naming the folder it was asked for.
func toyReader(dir string, o ImageOptions) (*Split, error) {
	if dir == "" {
		return nil, errors.New("toy: no folder")
	}
	ds := &Dataset{IDs: []uint64{1}, Labels: []uint8{1}, X: &Features{Rows: 1, NumDense: o.Size * o.Size, Dense: make([]float32, o.Size*o.Size)}}
	return &Split{Train: ds, Test: ds, Info: Info{Path: dir, Format: "toy"}}, nil
}

// toyRuns makes each run of TestImageFormatRegistry (go test -count=N)
// register a new name.
var toyRuns atomic.Int64

func TestImageFormatRegistry(t *testing.T) {
	name := fmt.Sprintf("toy-registry-test-%d", toyRuns.Add(1))
	if IsImageFormat(name) {
		t.Fatalf("%s is an image format before it is registered", name)
	}
	if _, err := LoadImages(name, "d", ImageOptions{}); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "data/images") {
		t.Fatalf("loading an unregistered format: got %v, want an error naming it and the package that registers the built-in sets", err)
	}
	RegisterImageFormat(ImageFormat{Name: name, Size: 5, Channels: 3, Read: toyReader})
	if !IsImageFormat(name) || !slices.Contains(ImageFormats(), name) {
		t.Fatalf("registered %s, but IsImageFormat = %v and ImageFormats = %v", name, IsImageFormat(name), ImageFormats())
	}
	if !slices.IsSorted(ImageFormats()) {
		t.Fatalf("ImageFormats not sorted: %v", ImageFormats())
	}
	if s, c, ok := ImageDefaults(name); s != 5 || c != 3 || !ok {
		t.Fatalf("ImageDefaults(%s) = %d, %d, %v; want the registered 5, 3, true", name, s, c, ok)
	}
	s, err := LoadImages(name, "folder", ImageOptions{Size: 2})
	if err != nil || s.Info.Path != "folder" || s.Train.X.NumDense != 4 {
		t.Fatalf("LoadImages did not call the registered reader with its arguments: %+v, %v", s, err)
	}
	if _, err := LoadImages(name, "", ImageOptions{}); err == nil || err.Error() != "toy: no folder" {
		t.Fatalf("the reader's error was not passed on unchanged: %v", err)
	}
	for _, tc := range []struct {
		what string
		f    ImageFormat
	}{
		{"twice", ImageFormat{Name: name, Size: 5, Channels: 3, Read: toyReader}},
		{"no name", ImageFormat{Size: 5, Channels: 3, Read: toyReader}},
		{"no reader", ImageFormat{Name: name + "2", Size: 5, Channels: 3}},
		{"two channels", ImageFormat{Name: name + "3", Size: 5, Channels: 2, Read: toyReader}},
		{"side 0", ImageFormat{Name: name + "4", Channels: 1, Read: toyReader}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("RegisterImageFormat(%+v) did not panic", tc.f)
				}
			}()
			RegisterImageFormat(tc.f)
		})
	}
}

func TestTableFormatsAreNotImages(t *testing.T) {
	for _, f := range []string{FormatCriteo, FormatAvazu, FormatCSV, ""} {
		if s, c, ok := ImageDefaults(f); ok || s != 0 || c != 0 || IsImageFormat(f) {
			t.Errorf("%q: ImageDefaults = %d, %d, %v, IsImageFormat = %v; want a table format", f, s, c, ok, IsImageFormat(f))
		}
	}
}
