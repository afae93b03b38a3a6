package config

import (
	"slices"
	"strings"
	"testing"
)

// TestTableKeys reads the table keys from YAML (a label value list may be
// one scalar) and checks that they reach the data options.
func TestTableKeys(t *testing.T) {
	c := Default()
	raw := "format: csv\nlabel: churn\npositive: yes\nnegative: [no, maybe]\nnumeric: [age]\ncategorical: [zip]\nignore: [name]\n"
	if err := DecodeYAML([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	o := c.DataOptions()
	if !slices.Equal(o.Positive, []string{"yes"}) || !slices.Equal(o.Negative, []string{"no", "maybe"}) ||
		!slices.Equal(o.Dense, []string{"age"}) || !slices.Equal(o.Categorical, []string{"zip"}) || !slices.Equal(o.Ignore, []string{"name"}) {
		t.Errorf("data options %+v", o)
	}
	out, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := DecodeYAML(out, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Positive, c.Positive) || !slices.Equal(back.Negative, c.Negative) || !slices.Equal(back.Ignore, c.Ignore) {
		t.Errorf("round trip: %+v", back)
	}
	// The table keys are refused for an image format.
	img := Default()
	img.Format, img.Model, img.Out, img.Negative = "fashion-mnist", "cnn", "x", Values{"0"}
	if err := img.Validate(); err == nil || !strings.Contains(err.Error(), "key negative applies to tables") {
		t.Errorf("image format with negative labels: %v", err)
	}
	// A csv table needs its label column.
	csv := Default()
	csv.Format, csv.Data = "csv", "t.csv"
	if _, err := csv.LoadData(); err == nil || !strings.Contains(err.Error(), "no label column named (key label)") {
		t.Errorf("csv without a label: %v", err)
	}
}

func TestBatchWarning(t *testing.T) {
	for _, c := range []struct {
		batch, rows int
		want        string
	}{
		{1024, 400, "batch size 1024 (key batch) exceeds the 400 training rows"},
		{400, 400, ""},
		{32, 400, ""},
		{8, 0, ""},
	} {
		w := BatchWarning(c.batch, c.rows, 1)
		got := w.Text
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("BatchWarning(%d, %d) = %q, want %q", c.batch, c.rows, got, c.want)
		}
		if wantKeys := map[bool][]string{true: {"batch"}}[got != ""]; !slices.Equal(w.Keys, wantKeys) {
			t.Errorf("BatchWarning(%d, %d) keys %v, want %v", c.batch, c.rows, w.Keys, wantKeys)
		}
	}
}

// TestPositivesWarning: batches holding fewer than MinPositivesPerBatch
// positives on average are warned of, with the share of batches without
// any ((1−p)^B, by hand) and the batch that would hold enough.
func TestPositivesWarning(t *testing.T) {
	for _, tc := range []struct {
		batch int
		rate  float64
		want  []string // "" parts: no warning
	}{
		{256, 0.05, nil}, // 12.8 positives
		{40, 0.05, nil},  // exactly 2
		{64, 0.02, []string{"batches of 64 rows hold 1.3 positives", "27% of batches have none", "at least 100 rows"}}, // 0.98^64 = 0.274
		{32, 0.001, []string{"hold 0.0 positives", "97% of batches have none", "at least 2000 rows"}},                  // 0.999^32 = 0.968
		{64, 0, nil},
		{0, 0.01, nil},
	} {
		kw := PositivesWarning(tc.batch, tc.rate)
		w := kw.Text
		if w != "" && !slices.Equal(kw.Keys, []string{"batch"}) {
			t.Errorf("batch %d, rate %v: keys %v, want [batch]", tc.batch, tc.rate, kw.Keys)
		}
		if (w == "") != (tc.want == nil) {
			t.Errorf("batch %d, rate %v: %q", tc.batch, tc.rate, w)
			continue
		}
		for _, part := range tc.want {
			if !strings.Contains(w, part) {
				t.Errorf("batch %d, rate %v: %q lacks %q", tc.batch, tc.rate, w, part)
			}
		}
	}
}
