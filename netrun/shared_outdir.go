package netrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/splitguard/splitguard/rundir"
)

// operationalKeys are the keys of a party's config.yaml that a restart
// of the same run may change: where it listens or connects, its
// certificates, timeouts, metrics and where it keeps checkpoints.
var operationalKeys = []string{"addr", "name", "peer_name", "cert", "key", "ca", "cert_dir", "insecure_loopback",
	"checkpoint_dir", "keep_checkpoints", "metrics_addr", "metrics_public", "peer_timeout", "exchange_timeout", "max_message_mb"}

// openOut takes the lock of the party's run directory cfg.Out (held by
// the process until the run returns; a directory in use by another
// process is refused untouched) and decides, before anything there is
// read or written, whether the run may write it: a restart of the same
// configuration resumes; another run (a finished one, or one of another
// configuration: rundir.CheckReuse) is refused, or with opt.Force
// replaced: its run files and this party's checkpoints are removed.
func openOut(cfg *Config, opt Options, role string, log *slog.Logger) (*rundir.DirLock, error) {
	lock, err := rundir.Lock(cfg.Out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	// This party's checkpoints say that the run made progress.
	st := store{dir: cfg.checkpointDir(), role: role}
	steps, err := st.steps()
	if err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	ckpts := []string{st.ackedPath(), st.fallbacksPath()}
	for _, s := range steps {
		ckpts = append(ckpts, st.path(s))
	}
	err = rundir.CheckReuse(cfg.Out, func(path string) ([]string, error) {
		old, err := LoadConfigFile(path, Default())
		if err != nil {
			return nil, err
		}
		cur := *cfg
		return rundir.DiffConfigs(&old, &cur, &old.Config, &cur.Config, operationalKeys...)
	}, ckpts...)
	if err == nil {
		return lock, nil
	}
	if !errors.Is(err, rundir.ErrOtherRun) || !opt.Force {
		lock.Unlock()
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	log.Warn("replacing the run in the run directory (force)", "dir", cfg.Out, "was", err)
	err = nil
	for _, p := range ckpts {
		if err == nil {
			err = removeIfThere(p)
		}
	}
	if err == nil {
		err = rundir.Clear(cfg.Out)
	}
	if err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	return lock, nil
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// stopped ends the active party's run that a signal stopped after steps
// (cause, a *rundir.Stopped): the top model is saved, the summary will
// name the signal, and the error says where the model is. The newest
// checkpoint both parties hold stays the one to resume from.
func (r *activeRun) stopped(cause error, steps int64) error {
	r.log.Warn("stopping on a signal", "signal", rundir.SignalOf(cause), "steps", steps)
	r.srv.Leave(cause) // the passive waits for the restarted process
	r.rec.SetSignal(rundir.SignalOf(cause))
	if err := r.saveFinal(); err != nil {
		return errors.Join(fmt.Errorf("active: %w after %d steps", cause, steps), err)
	}
	return fmt.Errorf("active: %w after %d steps; the model is saved in %s", cause, steps, r.cfg.Out)
}

// stopped ends the passive party's run that a signal stopped (cause, a
// *rundir.Stopped): the bottom model reached is saved (the newest
// checkpoint both parties hold stays the one to resume from).
func (p *passiveRun) stopped(cause error) error {
	log := p.opt.logger().With("party", "passive")
	if p.party == nil {
		log.Warn("stopping on a signal before training started", "signal", rundir.SignalOf(cause))
		return fmt.Errorf("passive: %w before training started", cause)
	}
	log.Warn("stopping on a signal", "signal", rundir.SignalOf(cause), "steps", p.party.Step())
	if err := p.saveFinal(); err != nil {
		return errors.Join(fmt.Errorf("passive: %w after %d steps", cause, p.party.Step()), err)
	}
	return fmt.Errorf("passive: %w after %d steps; the model is saved in %s", cause, p.party.Step(), p.cfg.Out)
}

// signalled returns ctx's cause when a signal stopped it (nil otherwise).
func signalled(ctx context.Context) error {
	if cause := context.Cause(ctx); rundir.SignalOf(cause) != "" {
		return cause
	}
	return nil
}
