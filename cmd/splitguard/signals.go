package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/splitguard/splitguard/rundir"
)

// Exit statuses of a command that a signal stopped (128 + the signal's
// number, as a shell reports a process the signal killed): the run ended
// gracefully, with a summary marked truncated that names the signal.
const (
	exitSIGINT  = 128 + 2
	exitSIGTERM = 128 + 15
)

// exitStatusHelp is the paragraph of the commands' help on signals and
// exit statuses.
const exitStatusHelp = "SIGINT (Ctrl-C) or SIGTERM (what Slurm, Kubernetes and systemd send) stops the run gracefully:\n" +
	"a log line names the signal, the model reached is saved (and by train and active a summary.json marked\n" +
	"truncated, naming the signal), and the exit status is 130 (SIGINT) or 143 (SIGTERM); a second signal\n" +
	"ends the process at once. Checkpoints are kept: the same command again resumes (train runs again).\n" +
	"Exit status 1: any other error; 0: the run finished."

// stopped is the exit status of the signal that stopped this process's
// run (0: none).
var stopped atomic.Int32

// signalName is the name summary.json gives a stop signal.
func signalName(s os.Signal) (string, int32) {
	if s == syscall.SIGTERM {
		return "SIGTERM", exitSIGTERM
	}
	return "SIGINT", exitSIGINT
}

// notifyStop returns ctx cancelled, with a *rundir.Stopped cause, on the
// first SIGINT or SIGTERM, after calling onSignal (when non-nil) with its
// name; the signals then get their default action back, so that a second
// one ends the process at once. release stops listening.
func notifyStop(ctx context.Context, onSignal func(name string)) (_ context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			name, code := signalName(s)
			stopped.Store(code)
			if onSignal != nil {
				onSignal(name)
			}
			cancel(&rundir.Stopped{Signal: name})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(ch)
		cancel(nil)
	}
}
