package report

// wireLabel names a run's wire option when it is not the exact f32
// protocol both ways (keys wire_embedding, wire_gradient, wire_feedback),
// so that runs of one protection in different encodings are different
// settings of the matrix: "wire int8" when both directions agree,
// "wire bf16/int8" (embeddings/gradients) when not, "+EF" with error
// feedback of the gradients; "" for f32 both ways.
func wireLabel(cfg map[string]any) string {
	emb, grad := str(cfg, "wire_embedding"), str(cfg, "wire_gradient")
	if emb == "" {
		emb = "f32"
	}
	if grad == "" {
		grad = "f32"
	}
	ef, _ := cfg["wire_feedback"].(bool)
	if emb == "f32" && grad == "f32" && !ef {
		return ""
	}
	l := "wire " + emb
	if grad != emb {
		l += "/" + grad
	}
	if ef {
		l += "+EF"
	}
	return l
}
