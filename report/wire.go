package report

import "strconv"

// wireLabel names a run's wire option when it is not the exact f32
// protocol both ways (keys wire_embedding, wire_gradient, wire_feedback),
// so that runs of one protection in different encodings are different
// settings of the matrix: "wire int8" when both directions agree,
// "wire bf16/int8" (embeddings/gradients) when not, "+EF" with error
// feedback of the gradients; "" for f32 both ways. A schedule other than
// the synchronous one (keys staleness and local_steps, when a
// configuration has them) adds "k=N" and "Q=N", linear weight prediction
// (key staleness_prediction) "k=N F=X".
func wireLabel(cfg map[string]any) string {
	emb, grad := str(cfg, "wire_embedding"), str(cfg, "wire_gradient")
	if emb == "" {
		emb = "f32"
	}
	if grad == "" {
		grad = "f32"
	}
	ef, _ := cfg["wire_feedback"].(bool)
	var l string
	if emb != "f32" || grad != "f32" || ef {
		l = "wire " + emb
		if grad != emb {
			l += "/" + grad
		}
		if ef {
			l += "+EF"
		}
	}
	if k := num(cfg, "staleness"); k > 0 {
		l = joinLabel(l, "k="+strconv.FormatFloat(k, 'f', -1, 64))
		if f := num(cfg, "staleness_prediction"); f > 0 {
			l += " F=" + strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	if q := num(cfg, "local_steps"); q > 1 {
		l = joinLabel(l, "Q="+strconv.FormatFloat(q, 'f', -1, 64))
	}
	return l
}

// joinLabel appends part to the label l, comma-separated.
func joinLabel(l, part string) string {
	if l == "" {
		return part
	}
	return l + ", " + part
}
