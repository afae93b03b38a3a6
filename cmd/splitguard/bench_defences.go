package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/bench/step"
	"github.com/splitguard/splitguard/tensor"

	"github.com/splitguard/splitguard/model"
)

// benchDefences is `splitguard bench --defences`: the cost table of every
// registered defence (step.Defences).
func benchDefences(cmd *cobra.Command, o benchOptions) error {
	if k, ok := model.LookupKind(o.Model); !ok || k.Images {
		return fmt.Errorf("bench: --defences times a table model's run (--model %s), not %q", model.OrList(model.KindsWhere(func(k model.Kind) bool { return !k.Images })), o.Model)
	}
	rows, err := step.Defences(cmd.Context(), step.DefenceSpec{Batch: o.Batch, Steps: o.Steps, Warmup: o.Warmup, Model: o.Model, Seed: 1})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	out := cmd.OutOrStdout()
	if o.JSON {
		return json.NewEncoder(out).Encode(map[string]any{
			"model": o.Model, "engine": tensor.Default.Name(), "batch": o.Batch, "steps": o.Steps,
			"bytes_note": "per training step, as the network transport encodes the messages (protobuf plus gRPC's 5-byte message header; HTTP/2 and TLS framing excluded)",
			"defences":   rows,
		})
	}
	fmt.Fprintf(out, "model %s, engine %s, batch %d: median of %d steps after %d warm-up steps\n", o.Model, tensor.Default.Name(), o.Batch, o.Steps, o.Warmup)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "defence\tsetting\tms/step\t× none\tsetup ms\tbytes passive→active\tbytes active→passive\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%.2f\t%.1f\t%.0f\t%.0f\t\n", r.Defence, r.Setting, r.MSPerStep, r.Ratio, r.SetupMS, r.BytesForward, r.BytesBackward)
	}
	return w.Flush()
}
