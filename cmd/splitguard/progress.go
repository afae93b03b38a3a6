package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/splitguard/splitguard/rundir"
	"golang.org/x/term"
)

// progress shows training progress on stderr: a progress bar when stderr
// is a terminal, a plain log line every few seconds otherwise.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	last  time.Time
	batch int
}

func newProgress(w io.Writer, batch int) *progress {
	p := &progress{w: w, batch: batch}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(w),
			progressbar.OptionShowCount(), progressbar.OptionSetItsString("batches"),
			progressbar.OptionShowIts(), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(true))
	}
	return p
}

func (p *progress) update(s rundir.Progress) {
	leak := "—"
	if s.Leak != nil {
		leak = fmt.Sprintf("%.3f", *s.Leak)
	}
	desc := fmt.Sprintf("loss %.4f  %.0f ex/s  %s %s", s.Loss, s.ExamplesPerS, s.LeakKey, leak)
	if p.bar != nil {
		if p.bar.GetMax64() != s.Total {
			p.bar.ChangeMax64(s.Total)
		}
		p.bar.Describe(desc)
		_ = p.bar.Set64(s.Step)
		return
	}
	if time.Since(p.last) >= 5*time.Second || s.Step == s.Total {
		p.last = time.Now()
		fmt.Fprintf(p.w, "batch %d/%d  %s\n", s.Step, s.Total, desc)
	}
}

// logWriter returns where plain log lines go without breaking the bar.
func (p *progress) logWriter() io.Writer {
	if p.bar == nil {
		return p.w
	}
	return barSafe{p}
}

type barSafe struct{ p *progress }

func (b barSafe) Write(s []byte) (int, error) {
	_ = b.p.bar.Clear()
	return b.p.w.Write(s)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
