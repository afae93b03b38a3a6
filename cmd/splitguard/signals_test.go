//go:build unix

package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/splitguard/splitguard/rundir"
)

// TestNotifyStop: SIGINT and SIGTERM sent to this process cancel the
// context with a rundir.Stopped cause naming the signal, call onSignal
// with its name and set the exit status 128 + its number.
func TestNotifyStop(t *testing.T) {
	defer stopped.Store(0)
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int32
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(tc.name, func(t *testing.T) {
			stopped.Store(0)
			heard := make(chan string, 1)
			ctx, release := notifyStop(context.Background(), func(name string) { heard <- name })
			defer release()
			if err := syscall.Kill(syscall.Getpid(), tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the context was not cancelled")
			}
			if got := rundir.SignalOf(context.Cause(ctx)); got != tc.name {
				t.Errorf("cause %v, want %s", context.Cause(ctx), tc.name)
			}
			if got := <-heard; got != tc.name {
				t.Errorf("onSignal(%q), want %s", got, tc.name)
			}
			if got := stopped.Load(); got != tc.code {
				t.Errorf("exit status %d, want %d", got, tc.code)
			}
		})
	}
}
