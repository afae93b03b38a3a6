package run

import (
	"fmt"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/tensor"
)

// partyCheat is the one cheating passive party of a run of several (key
// cheater): its index and its free-riding mode or backdoor; the other
// parties stay honest.
type partyCheat struct {
	k      int
	tamper integrity.Tamper
	bd     integrity.Backdoor
	known  []uint64 // the backdoor's known rows of the target class
}

// newPartyCheat builds the cheating party's misbehaviour (keys cheater,
// free_ride, backdoor) over its own view; nil when every party is honest.
func newPartyCheat(cfg *config.Config, pvs []*view, av *view) (*partyCheat, error) {
	k := cfg.CheaterIndex()
	if k < 0 {
		return nil, nil
	}
	c := &partyCheat{k: k}
	var err error
	if c.tamper, err = cfg.NewTamper(); err != nil {
		return nil, err
	}
	if c.bd, c.known, err = newBackdoor(cfg, pvs[k], av); err != nil {
		return nil, fmt.Errorf("passive party %s: %w", cfg.Cheater, err)
	}
	return c, nil
}

// configure makes passive party k's configuration the cheater's when k
// is the cheater; it does nothing on a nil receiver.
func (c *partyCheat) configure(k int, pc *passive.Config) {
	if c == nil || k != c.k {
		return
	}
	if c.tamper != nil {
		pc.Send = c.tamper
	}
	if c.bd != nil {
		pc.Cheat = c.bd
	}
}

// recordBackdoor puts the cheater's backdoor outcome in the summary: the
// test rows scored by every party's bottom and the top, clean and with
// the trigger on the cheater's columns and embedding block only.
func (m *multiRun) recordBackdoor() error {
	c := m.cheat
	if m.av.test == nil || len(m.av.test.IDs) == 0 {
		return nil
	}
	pur := newRowPurifying(m.grd.RowPurifier(), len(m.av.test.IDs), c.k)
	clean, trig, err := m.backdoorLogits(pur)
	if err != nil {
		return fmt.Errorf("backdoor outcome: %w", err)
	}
	out, err := backdoorSummary(m.cfg, c.bd, c.known, clean, trig, m.av)
	if err != nil {
		return err
	}
	if out.VflipRows, err = pur.summary(m.cfg, c.bd, c.known, m.av); err != nil {
		return err
	}
	logBackdoor(m.rec, out, m.opt)
	return nil
}

// backdoorLogits scores the test rows with the models as they are,
// without and with the cheater's trigger, and, with pur not nil, purified.
func (m *multiRun) backdoorLogits(pur *rowPurifying) (clean, trig []float32, err error) {
	c := m.cheat
	n := len(m.av.test.IDs)
	clean, trig = make([]float32, n), make([]float32, n)
	pb := make([]data.Batch, len(m.bottoms))
	es := make([]*tensor.Matrix, len(m.bottoms))
	var ab data.Batch
	joined := &tensor.Matrix{}
	rows := make([]int, 0, backdoorRows)
	for s := 0; s < n; s += backdoorRows {
		rows = rowChunk(rows, s, n, backdoorRows)
		w := wideBatch(m.wide, m.av.test.X, rows, &ab)
		for _, triggered := range []bool{false, true} {
			for k, b := range m.bottoms {
				m.pvs[k].test.X.Gather(rows, &pb[k])
				if triggered && k == c.k {
					c.bd.TriggerFeatures(&pb[k])
				}
				if es[k], err = b.Forward(&pb[k]); err != nil {
					return nil, nil, err
				}
				if triggered && k == c.k {
					es[k] = es[k].Clone()
					c.bd.TriggerEmbedding(es[k])
				}
			}
			joined = tensor.SideBySide(joined, es...)
			logits, err := m.top.Forward(joined, w)
			if err != nil {
				return nil, nil, err
			}
			dst := clean
			if triggered {
				dst = trig
			}
			copy(dst[s:], logits)
			if err := pur.chunk(joined, w, m.top, s, triggered); err != nil {
				return nil, nil, err
			}
		}
	}
	return clean, trig, nil
}

// shownSender shows every message a passive party sends, after its
// free-riding mode (inner, nil for an honest party), to show
// (Options.sent).
type shownSender struct {
	inner passive.Sender
	party int
	show  func(int, int64, *tensor.Matrix, bool)
}

// Send passes e through the free-riding mode and shows the result.
func (s *shownSender) Send(step int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error) {
	if s.inner != nil {
		var err error
		if e, err = s.inner.Send(step, e, train); err != nil {
			return nil, err
		}
	}
	s.show(s.party, step, e, train)
	return e, nil
}
