package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// newLineLogger returns the logger of a run or a plan: one plain line per
// record on w (see lineHandler), configuration keys named as the flags of
// cmd.
func newLineLogger(w io.Writer, cmd *cobra.Command) *slog.Logger {
	return slog.New(flagNamesHandler{lineHandler{w: w, mu: &sync.Mutex{}}, cmd})
}

// newPartyLogger returns the logger of a party of a two-party run:
// slog's text format on w (time=… level=… msg=…), configuration keys
// named as the flags of cmd.
func newPartyLogger(w io.Writer, cmd *cobra.Command) *slog.Logger {
	return slog.New(flagNamesHandler{slog.NewTextHandler(w, nil), cmd})
}

// flagNamesHandler names, in the message and the text attributes (a
// refusal's reason) of a record with the attribute key=NAME, the flag of
// cmd that sets configuration key NAME ("key batch" → "--batch"), and
// passes the record on.
type flagNamesHandler struct {
	slog.Handler
	cmd *cobra.Command
}

// Handle rewrites r's message by its key attributes and passes it on.
func (h flagNamesHandler) Handle(ctx context.Context, r slog.Record) error {
	var keys []string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			keys = append(keys, a.Value.String())
		}
		return true
	})
	if len(keys) > 0 {
		n := slog.NewRecord(r.Time, r.Level, withFlagNames(h.cmd, r.Message, keys), r.PC)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "key" && a.Value.Kind() == slog.KindString {
				a.Value = slog.StringValue(withFlagNames(h.cmd, a.Value.String(), keys))
			}
			n.AddAttrs(a)
			return true
		})
		r = n
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs returns the handler with attrs, still naming flags.
func (h flagNamesHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flagNamesHandler{h.Handler.WithAttrs(attrs), h.cmd}
}

// WithGroup returns the handler with a group, still naming flags.
func (h flagNamesHandler) WithGroup(name string) slog.Handler {
	return flagNamesHandler{h.Handler.WithGroup(name), h.cmd}
}

// lineHandler writes one line per record, as the command line always
// has: the message, "warning: " before it at level warn and above, then
// every attribute but key (which flagNamesHandler puts into the message)
// as " name=value". Records below info are dropped.
type lineHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	attrs []slog.Attr
}

// Enabled reports whether level is info or above.
func (h lineHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

// Handle writes r as one line.
func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if r.Level >= slog.LevelWarn {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		if a.Key != "key" && a.Key != "" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns the handler writing attrs on every line.
func (h lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)
	return h
}

// WithGroup returns the handler unchanged: the plain lines have no groups.
func (h lineHandler) WithGroup(string) slog.Handler { return h }
