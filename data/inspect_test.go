package data

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestInspectSamples(t *testing.T) {
	// Counted independently with awk: 200 rows, 49 positives, I1 empty in
	// 90 rows, C9 takes 2 values; Avazu: 100 rows, 20 positives, 98
	// distinct device_ip values.
	r, err := Inspect(criteoSample, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 200 || r.Positives != 49 || r.BadRows != 0 || !r.HasLabels {
		t.Errorf("criteo: rows %d positives %d bad %d", r.Rows, r.Positives, r.BadRows)
	}
	i1, c9 := r.Columns[1], r.Columns[22]
	if i1.Name != "I1" || i1.Kind != KindDense || i1.NA != 90 || c9.Name != "C9" || c9.Distinct != 2 || !c9.Exact {
		t.Errorf("criteo columns: %+v %+v", i1, c9)
	}
	r, err = Inspect(avazuSample, Options{Format: FormatAvazu}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 100 || r.Positives != 20 || r.Columns[12].Name != "device_ip" || r.Columns[12].Distinct != 98 {
		t.Errorf("avazu: rows %d positives %d col %+v", r.Rows, r.Positives, r.Columns[12])
	}
	var out bytes.Buffer
	if err := r.WriteText(&out); err != nil || !strings.Contains(out.String(), "device_ip") {
		t.Errorf("report text: %v\n%s", err, out.String())
	}
}

func TestInspectHandWritten(t *testing.T) {
	body := "k,x,y\na,1,1\nb,,0\na,3,1\nbad\nc,x9,0\n"
	r, err := InspectReader(strings.NewReader(body), "hand", Options{Format: FormatCSV, LabelCol: "y", Dense: []string{"x"}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 4 || r.BadRows != 1 || r.Positives != 2 {
		t.Errorf("rows %d bad %d positives %d", r.Rows, r.BadRows, r.Positives)
	}
	k, x := r.Columns[0], r.Columns[1]
	// k has 3 distinct values, past the cap of 2: estimated (HLL is exact
	// in this range up to rounding).
	if k.Exact || k.Distinct != 3 {
		t.Errorf("k: %+v", k)
	}
	// x: valid 1, 3 → min 1, max 3, mean 2; one NA, one invalid.
	if x.Kind != KindDense || x.NA != 1 || x.Invalid != 1 || x.Min != 1 || x.Max != 3 || x.Mean != 2 {
		t.Errorf("x: %+v", x)
	}
	// Criteo passive file without labels is inspected, not rejected.
	line := strings.Repeat("\t", 38) + "\n"
	r, err = InspectReader(strings.NewReader(line+line), "passive", Options{}, 0)
	if err != nil || r.HasLabels || r.Rows != 2 || !math.IsNaN(r.PositiveRate()) {
		t.Errorf("passive file: %v %+v", err, r)
	}
}

func TestHyperLogLog(t *testing.T) {
	for _, n := range []int{1000, 50000, 300000} {
		s := newHyperLogLog()
		for i := range n {
			s.add(hashBytes(9, []byte(strconv.Itoa(i))))
			s.add(hashBytes(9, []byte(strconv.Itoa(i)))) // duplicates do not count
		}
		if e := s.estimate(); math.Abs(e-float64(n)) > 0.04*float64(n) {
			t.Errorf("n = %d: estimate %.0f", n, e)
		}
	}
}
