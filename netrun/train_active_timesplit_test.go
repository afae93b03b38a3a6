package netrun

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitguard/splitguard/transport/linktest"
)

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// timeSplit returns the compute_ms and waiting_ms of the JSON log line
// whose message starts with "time per training step".
func timeSplit(t *testing.T, who string, log *lockedBuffer) (compute, waiting float64) {
	t.Helper()
	for line := range strings.SplitSeq(log.b.String(), "\n") {
		var r struct {
			Msg       string
			Compute   float64 `json:"compute_ms"`
			Waiting   float64 `json:"waiting_ms"`
			StepCount int64   `json:"steps"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && strings.HasPrefix(r.Msg, "time per training step") {
			if r.StepCount == 0 {
				t.Fatalf("%s: time split over no steps: %s", who, line)
			}
			return r.Compute, r.Waiting
		}
	}
	t.Fatalf("%s logged no time split:\n%s", who, log.b.String())
	return 0, 0
}

// TestRunLogsTimeSplit runs both parties through an emulated link of a
// 30 ms round trip and checks the time split each logs at the end: the
// passive's wait less the active's compute, and the active's wait less
// the passive's compute, are both estimates of the link's share of a
// step, which cannot be below the round trip (the proxy delays every
// byte by half of it each way).
func TestRunLogsTimeSplit(t *testing.T) {
	root := t.TempDir()
	base := smallConfig(synthFile(t, 600), filepath.Join(root, "unused"))
	base.Epochs, base.EvalEvery, base.Attacks = 1, 0, []string{"norm"}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.CheckpointEvery, pas.CheckpointEvery = 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var aLog, pLog lockedBuffer
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := RunActive(ctx, act, Options{Logger: slog.New(slog.NewJSONHandler(&aLog, nil)), Ready: func(a string) { addr <- a }})
		done <- err
	}()
	select {
	case pas.Addr = <-addr:
	case err := <-done:
		t.Fatal(err)
	}
	const rtt = 30 * time.Millisecond
	px, err := linktest.Start(pas.Addr, linktest.Link{Delay: rtt / 2}, linktest.Link{Delay: rtt / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	pas.Addr = px.Addr()
	if _, err := RunPassive(ctx, pas, Options{Logger: slog.New(slog.NewJSONHandler(&pLog, nil))}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	aCompute, aWait := timeSplit(t, "active", &aLog)
	pCompute, pWait := timeSplit(t, "passive", &pLog)
	fromPassive, fromActive := pWait-aCompute, aWait-pCompute
	t.Logf("passive: compute %.1f ms, waiting %.1f ms; active: compute %.1f ms, waiting %.1f ms; link share %.1f ms (passive's view), %.1f ms (active's)",
		pCompute, pWait, aCompute, aWait, fromPassive, fromActive)
	floor := float64(rtt.Milliseconds())
	if fromPassive < floor || fromActive < floor {
		t.Errorf("link share %.1f ms (passive's view) or %.1f ms (active's) below the %v round trip", fromPassive, fromActive, rtt)
	}
}
