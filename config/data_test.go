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
		got := BatchWarning(c.batch, c.rows, 1)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("BatchWarning(%d, %d) = %q, want %q", c.batch, c.rows, got, c.want)
		}
	}
}
