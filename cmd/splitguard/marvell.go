package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/marvell"
)

func init() { subcommands = append(subcommands, newMarvellCmd) }

func newMarvellCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "marvell",
		Short: "The Marvell optimisation problem",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "solve",
		Short: "Solve Marvell problems given as JSON lines on stdin",
		Long: `Reads one JSON object per line from stdin,
  {"u": …, "v": …, "d": …, "g": …, "p": …, "P": …}
(u, v: per-coordinate class variances; d: dimension; g = ‖Δ‖²; p: positive
fraction; P: noise power budget) and writes one JSON line per input:
  {"lam10": …, "lam20": …, "lam11": …, "lam21": …, "sumKL": …,
   "error_lower_bound": …, "auc_bound": …}
where lamXY is λ_X^(Y). A bad line gives {"line": N, "error": "…"} in its
place (and a message on stderr); the run goes on and exits non-zero at the
end. Blank lines are skipped. An infinite sumKL is written as the largest
float64.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			failed, err := marvellSolveStream(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("marvell solve: %d input line(s) failed", failed)
			}
			return nil
		},
	})
	cmd.AddCommand(newMarvellExpectCmd())
	return cmd
}

// marvellResult is one output line of `marvell solve`.
type marvellResult struct {
	Lam10           float64 `json:"lam10"`
	Lam20           float64 `json:"lam20"`
	Lam11           float64 `json:"lam11"`
	Lam21           float64 `json:"lam21"`
	SumKL           float64 `json:"sumKL"`
	ErrorLowerBound float64 `json:"error_lower_bound"`
	AUCBound        float64 `json:"auc_bound"`
}

// marvellLineError is the output line for an input line that failed.
type marvellLineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// marvellSolveStream solves every line of in, writing results to out and
// messages about bad lines to errw. It returns the number of bad lines;
// its error is for I/O failures only.
func marvellSolveStream(in io.Reader, out, errw io.Writer) (failed int, err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec any
		pr, perr := parseMarvellLine(text)
		if perr == nil {
			var s marvell.Solution
			s, perr = marvell.Solve(pr)
			rec = marvellResult{s.Lam10, s.Lam20, s.Lam11, s.Lam21, s.SumKL, marvell.ErrorLowerBound(s.SumKL), marvell.AUCBound(s.SumKL)}
		}
		if perr != nil {
			failed++
			rec = marvellLineError{Line: line, Error: perr.Error()}
			fmt.Fprintf(errw, "splitguard marvell solve: stdin line %d: %v\n", line, perr)
		}
		if err := enc.Encode(rec); err != nil {
			return failed, fmt.Errorf("marvell solve: writing result of line %d: %w", line, err)
		}
		// Flush per line so that a consumer reading the pipe sees each
		// answer as soon as it is computed.
		if err := w.Flush(); err != nil {
			return failed, fmt.Errorf("marvell solve: writing result of line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return failed, fmt.Errorf("marvell solve: reading stdin after line %d: %w", line, err)
	}
	return failed, nil
}

// marvellKeys are the fields of an input line; keys match exactly (so "p"
// and "P" are different fields).
var marvellKeys = []string{"u", "v", "d", "g", "p", "P"}

// parseMarvellLine decodes one input object into a Problem.
func parseMarvellLine(text string) (marvell.Problem, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return marvell.Problem{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var unknown []string
	for k := range raw {
		known := false
		for _, want := range marvellKeys {
			known = known || k == want
		}
		if !known {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return marvell.Problem{}, fmt.Errorf("unknown field(s) %s (want u, v, d, g, p, P)", strings.Join(unknown, ", "))
	}
	vals := make(map[string]float64, len(marvellKeys))
	for _, k := range marvellKeys {
		r, ok := raw[k]
		if !ok {
			return marvell.Problem{}, fmt.Errorf("missing field %q", k)
		}
		var x float64
		if err := json.Unmarshal(r, &x); err != nil {
			return marvell.Problem{}, fmt.Errorf("field %q: %s is not a number", k, string(r))
		}
		vals[k] = x
	}
	d := vals["d"]
	if d != math.Trunc(d) || d < 1 || d > math.MaxInt32 {
		return marvell.Problem{}, fmt.Errorf("field \"d\" = %v: want an integer ≥ 1", d)
	}
	pr := marvell.Problem{U: vals["u"], V: vals["v"], D: int(d), G: vals["g"], Pos: vals["p"], Power: vals["P"]}
	if err := pr.Validate(); err != nil {
		return pr, err
	}
	return pr, nil
}
