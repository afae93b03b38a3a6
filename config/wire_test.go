package config

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/transport/wire"
)

// TestWireKeys checks the wire encoding keys: the default is f32 both
// ways, a YAML file sets them by name, an empty value resolves to f32,
// and an unknown value is refused naming the key and the allowed values.
func TestWireKeys(t *testing.T) {
	c := Default()
	if w, err := c.Wire(); err != nil || w != (wire.Encodings{Embedding: wire.F32, Gradient: wire.F32}) {
		t.Fatalf("default encodings %+v, %v; want f32 both ways", w, err)
	}
	if err := DecodeYAML([]byte("wire_embedding: bf16\nwire_gradient: int8\n"), &c); err != nil {
		t.Fatal(err)
	}
	if w, err := c.Wire(); err != nil || w != (wire.Encodings{Embedding: wire.BF16, Gradient: wire.Int8}) {
		t.Fatalf("encodings %+v, %v; want bf16 and int8", w, err)
	}
	b, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nwire_embedding: bf16\n") || !strings.Contains(string(b), "\nwire_gradient: int8\n") {
		t.Errorf("config.yaml does not record the encodings:\n%s", b)
	}
	c.WireEmbedding, c.WireGradient = "", ""
	c.Resolve()
	if c.WireEmbedding != "f32" || c.WireGradient != "f32" {
		t.Errorf("resolved empty encodings to %q, %q; want f32", c.WireEmbedding, c.WireGradient)
	}
	c.SynthRows, c.Out = 100, t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid configuration refused: %v", err)
	}
	c.WireGradient = "fp8"
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), `key wire_gradient: unknown wire encoding "fp8" (want one of f32, f16, bf16, int8, int4)`) {
		t.Errorf("an unknown encoding: %v", err)
	}
}

// TestWireFeedbackKey checks the error-feedback key: off by default and
// absent from config.yaml then, recorded when on, and refused with f32
// gradients (nothing to feed back) naming the key.
func TestWireFeedbackKey(t *testing.T) {
	c := Default()
	b, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if c.WireFeedback || strings.Contains(string(b), "wire_feedback") {
		t.Fatalf("error feedback on by default or recorded when off:\n%s", b)
	}
	if err := DecodeYAML([]byte("wire_gradient: int8\nwire_feedback: true\n"), &c); err != nil {
		t.Fatal(err)
	}
	c.SynthRows, c.Out = 100, t.TempDir()
	if err := c.Validate(); err != nil || !c.WireFeedback {
		t.Fatalf("int8 with error feedback: %v (on: %t)", err, c.WireFeedback)
	}
	if b, _ = Marshal(&c); !strings.Contains(string(b), "\nwire_feedback: true\n") {
		t.Errorf("config.yaml does not record error feedback:\n%s", b)
	}
	c.WireGradient = "f32"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "key wire_feedback: error feedback needs a lossy wire_gradient") {
		t.Errorf("error feedback with f32 gradients: %v", err)
	}
}

// TestWireCompressionKey checks the compression key: none by default and
// then absent from config.yaml, zstd recorded by name, an unknown value
// refused naming the key and the allowed values.
func TestWireCompressionKey(t *testing.T) {
	c := Default()
	b, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := c.Wire(); err != nil || w.Compression != wire.None || strings.Contains(string(b), "wire_compression") {
		t.Fatalf("default compression %v, %v; config.yaml:\n%s", w.Compression, err, b)
	}
	if err := DecodeYAML([]byte("wire_embedding: int4\nwire_compression: zstd\n"), &c); err != nil {
		t.Fatal(err)
	}
	if w, err := c.Wire(); err != nil || w != (wire.Encodings{Embedding: wire.Int4, Gradient: wire.F32, Compression: wire.Zstd}) {
		t.Fatalf("encodings %+v, %v; want int4, f32, zstd", w, err)
	}
	if b, _ = Marshal(&c); !strings.Contains(string(b), "\nwire_compression: zstd\n") {
		t.Errorf("config.yaml does not record the compression:\n%s", b)
	}
	c.SynthRows, c.Out = 100, t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid configuration refused: %v", err)
	}
	c.WireCompression = "gzip"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `key wire_compression: unknown wire compression "gzip" (want one of none, zstd)`) {
		t.Errorf("an unknown compression: %v", err)
	}
}
