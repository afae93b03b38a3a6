package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// A four-class image set registered from this test file alone, with a
// default folder, a test fraction of its own and one set-specific option:
// configurations of it resolve and validate with no edit to config.
func init() {
	data.RegisterImageFormat(data.ImageFormat{Name: "toy-images", Size: 6, Channels: 3,
		Read: func(string, data.ImageOptions) (*data.Split, error) { return nil, errors.New("toy-images: not read") },
		Dir:  "/toy/images", TestFrac: 0.3, Classes: 4, Options: map[string]float64{"pos_rate": 0}})
}

func toyImages() Config {
	c := Default()
	c.Format, c.Model, c.CNNBlocks, c.Out = "toy-images", "cnn", 2, "out"
	return c
}

func TestRegisteredImageFormatResolves(t *testing.T) {
	c := toyImages()
	c.Resolve()
	if c.Data != "/toy/images" || c.TestFrac != 0.3 || c.ImageSize != 6 || c.ImageChannels != 3 || c.NegPerPos != 0 {
		t.Errorf("resolved data %q, test fraction %v, image %d×%d, neg_per_pos %d; want /toy/images, 0.3, 6×3, 0",
			c.Data, c.TestFrac, c.ImageSize, c.ImageChannels, c.NegPerPos)
	}
	for _, f := range []struct {
		format, dir string
		testFrac    float64
		negPerPos   int
	}{
		{"fashion-mnist", "/usr/share/datasets/fashion-mnist", 0, 0},
		{"isic", "", 0.2, 9},
	} {
		c := toyImages()
		c.Format = f.format
		c.Resolve()
		if c.Data != f.dir || c.TestFrac != f.testFrac || c.NegPerPos != f.negPerPos {
			t.Errorf("%s: resolved data %q, test fraction %v, neg_per_pos %d; want %q, %v, %d", f.format, c.Data, c.TestFrac, c.NegPerPos, f.dir, f.testFrac, f.negPerPos)
		}
	}
}

func TestRegisteredImageFormatValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" for a valid configuration
	}{
		{"valid", func(c *Config) {}, ""},
		{"its option", func(c *Config) { c.PosRate = 0.2 }, ""},
		{"last class", func(c *Config) { c.PositiveClass = 3 }, ""},
		{"class beyond", func(c *Config) { c.PositiveClass = 4 }, "positive class 4, want a toy-images class 0…3"},
		{"another set's option", func(c *Config) { c.NegPerPos = 3 }, "key neg_per_pos does not apply to the image format toy-images, which takes pos_rate"},
		{"padding", func(c *Config) { c.ImagePad = true }, "key image_pad does not apply to the image format toy-images"},
		{"test fraction", func(c *Config) { c.TestFrac = 1.5 }, "test fraction 1.5, want a fraction in (0, 1)"},
		{"fashion's test files", func(c *Config) { c.Format, c.TestFrac = "fashion-mnist", 0.1 }, "fashion-mnist uses its own test files"},
		{"fashion's classes", func(c *Config) { c.Format, c.PositiveClass = "fashion-mnist", 10 }, "want a fashion-mnist class 0…9"},
		{"isic's classes are binary", func(c *Config) { c.Format, c.PositiveClass, c.Data = "isic", 10, "d" }, ""},
		{"isic takes no pos_rate", func(c *Config) { c.Format, c.PosRate, c.Data = "isic", 0.1, "d" }, "key pos_rate does not apply to the image format isic, which takes neg_per_pos"},
		{"a table refuses image keys", func(c *Config) { c.Format, c.Model, c.Data, c.PosRate = "criteo", "wdl", "x.tsv", 0.1 }, "key pos_rate applies to the image formats (fashion-mnist, isic, toy-images), not criteo"},
		{"cnn on a table", func(c *Config) { c.Format, c.Data = "criteo", "x.tsv" }, "model cnn reads images (key format: fashion-mnist, isic or toy-images)"},
	} {
		c := toyImages()
		tc.edit(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
