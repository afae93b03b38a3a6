package netrun

import (
	"fmt"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/config"
)

// The configuration of a networked run with several passive parties (key
// parties): every party reads the same parties list; the active serves
// them all on one address (grpcnet.ListenParties), each passive is the
// entry of its own name (key name) and loads that entry's columns.

// validateMultiParty checks what a networked run with several passive
// parties needs of role's configuration.
func (c *Config) validateMultiParty(role string, bad func(string, ...any)) {
	switch {
	case role == "passive":
		if c.partyIndex() < 0 {
			bad("this party's name %q (key name) is none of the passive parties' (key parties: %s): a passive party loads the columns of its own entry",
				c.Name, strings.Join(c.PartyNames(), ", "), config.Key("name"), config.Key("parties"))
		}
	case role != "active":
		bad("%s with several passive parties (key parties) is not built", role, config.Key("parties"))
	}
	if len(c.Columns) > 0 {
		bad("both this party's columns (key columns) and several passive parties (key parties): each passive party's columns are its entry's", config.Key("columns"))
	}
	if c.Cheater != "" && (role != "passive" || c.Cheater != c.Name) {
		bad("over the network only the cheating passive party itself cheats: key cheater %q must be this passive party's own name (key name %q), and only its process sets keys cheater, free_ride and backdoor",
			c.Cheater, c.Name, config.Key("cheater"), config.Key("name"))
	}
}

// partyIndex is the index of this party's entry in key parties (by key
// name), -1 when none is.
func (c *Config) partyIndex() int {
	return slices.Index(c.PartyNames(), c.Name)
}

// multiPartyColumns sets the columns the party loads under key parties:
// a passive party its entry's, the active party key active_columns, or
// every column that no passive party names (config.Config.PartyFeatures).
func (c *Config) multiPartyColumns(role string) {
	if !c.MultiParty() {
		return
	}
	c.loadColumns, c.loadIgnore = nil, nil
	if role == "passive" {
		if k := c.partyIndex(); k >= 0 {
			c.loadColumns = c.Parties[k].Columns
		}
		return
	}
	if len(c.ActiveColumns) > 0 {
		c.loadColumns = c.ActiveColumns
		return
	}
	for _, p := range c.Parties {
		c.loadIgnore = append(c.loadIgnore, p.Columns...)
	}
}

// partiesDigest is the part of SharedDigest that the parties list and the
// aggregation add: every passive party's name and columns, in order
// (empty with one passive party, whose digest is then unchanged).
func (c *Config) partiesDigest() string {
	if !c.MultiParty() {
		return ""
	}
	var b strings.Builder
	b.WriteString(" parties=")
	for k, p := range c.Parties {
		fmt.Fprintf(&b, "%q:%q;", c.PartyName(k), p.Columns)
	}
	b.WriteString(" aggregation=" + c.AggregationOr())
	return b.String()
}

// partiesHint names the keys parties and aggregation in a digest
// mismatch's explanation when the configuration has them.
func partiesHint(c *Config) string {
	if !c.MultiParty() {
		return ""
	}
	return "the passive parties and their columns (key parties) and the aggregation (key aggregation) must be alike on every party; "
}

// partiesHintKeys are the keys partiesHint names.
func partiesHintKeys(c *Config) []string {
	if !c.MultiParty() {
		return nil
	}
	return []string{"parties", "aggregation"}
}
