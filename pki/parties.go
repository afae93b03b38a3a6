package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"time"
)

// ServerTLSConfigFor is ServerTLSConfig for a server that several clients
// reach, each under its own name (the active party of several passive
// parties): it accepts a client certificate that chains to f.CA, is valid
// for client authentication and carries exactly one of peerNames (a
// certificate carrying two of them is refused: it could act as either
// party). MatchName tells which one a connection's certificate carries.
func ServerTLSConfigFor(f Files, peerNames []string) (*tls.Config, error) {
	if len(peerNames) == 0 {
		return nil, fmt.Errorf("pki: server TLS config: no client names expected")
	}
	for i, n := range peerNames {
		if err := CheckName(n); err != nil {
			return nil, fmt.Errorf("pki: server TLS config: expected client %d: %w", i, err)
		}
		if slices.Index(peerNames, n) != i {
			return nil, fmt.Errorf("pki: server TLS config: client name %q expected twice", n)
		}
	}
	names := slices.Clone(peerNames)
	cfg, pool, err := pinnedConfig(f, names[0], "server", "client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		now := time.Now
		if cfg.Time != nil {
			now = cfg.Time
		}
		leaf, err := verifyChain(cs, pool, x509.ExtKeyUsageClientAuth, "client", now())
		if err != nil {
			return err
		}
		_, err = MatchName(leaf, names)
		return err
	}
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.ClientCAs = pool
	return cfg, nil
}

// MatchName returns the index of the one name of names that the
// certificate carries, or an error when it carries none or several.
func MatchName(leaf *x509.Certificate, names []string) (int, error) {
	k := -1
	for i, n := range names {
		if leaf.VerifyHostname(n) != nil {
			continue
		}
		if k >= 0 {
			return -1, fmt.Errorf("pki: client certificate %q carries two of the expected peers' names, %q and %q", leaf.Subject.CommonName, names[k], n)
		}
		k = i
	}
	if k < 0 {
		return -1, fmt.Errorf("pki: client certificate %q is for none of the expected peers %q (names %v)", leaf.Subject.CommonName, names, leaf.DNSNames)
	}
	return k, nil
}
