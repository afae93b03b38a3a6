package rundir

import (
	"strings"

	"github.com/splitguard/splitguard/audit"
)

// NewPartyAudits returns the audit of each view of a run with several
// passive parties (each view its members' indices into names, as
// fanin.Coalitions lists them), named by its members' names joined with
// "+", each with an auditor of its own from newAuditor: what SetParties
// takes.
func NewPartyAudits(names []string, views [][]int, newAuditor func() (*audit.Auditor, error)) ([]PartyAudit, error) {
	audits := make([]PartyAudit, 0, len(views))
	for _, members := range views {
		aud, err := newAuditor()
		if err != nil {
			return nil, err
		}
		mn := make([]string, len(members))
		for i, k := range members {
			mn[i] = names[k]
		}
		audits = append(audits, PartyAudit{Name: strings.Join(mn, "+"), Members: mn, Auditor: aud})
	}
	return audits, nil
}
