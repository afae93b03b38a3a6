// Package pki makes a small test certificate authority for the two parties
// of a splitguard run and builds the mutual-TLS configurations they use.
//
// Layout of a PKI directory (all PEM):
//
//	ca.crt        the CA certificate (self-signed, ECDSA P-256)
//	ca.key        the CA private key (PKCS #8, mode 0600)
//	NAME.crt      a party certificate signed by the CA
//	NAME.key      its private key (PKCS #8, mode 0600)
//
// Party certificates are usable both as TLS server and TLS client
// certificates and carry NAME as a DNS subject alternative name, so a
// party is identified by NAME whichever side of the connection it is on.
// The TLS configurations pin that name: a server accepts only a client whose
// verified certificate carries the expected peer name, and a client accepts
// only a server whose certificate carries the expected server name,
// whatever address it dialled.
//
// Only the standard library's crypto is used. The CA is meant for tests and
// for deployments where the two parties exchange ca.crt out of band; a real
// deployment may use certificates from any CA with the same properties.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// File names inside a PKI directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// ClockSkew is how far certificates are backdated: a party whose clock is
// up to this much behind the machine that issued them (or that jumped
// back by as much) still accepts them.
const ClockSkew = 2 * time.Hour

// DefaultValidity is the lifetime of certificates when none is given.
const DefaultValidity = 365 * 24 * time.Hour

// CertFile returns the path of a party's certificate in dir.
func CertFile(dir, name string) string { return filepath.Join(dir, name+".crt") }

// KeyFile returns the path of a party's private key in dir.
func KeyFile(dir, name string) string { return filepath.Join(dir, name+".key") }

// nameRE is what a party name may look like: a DNS name (labels of
// letters, digits and hyphens separated by dots). It doubles as a safe
// file name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// CheckName reports whether name is usable as a party name: a DNS name of
// at most 253 characters that is not an IP address.
func CheckName(name string) error {
	if net.ParseIP(name) != nil {
		return fmt.Errorf("pki: party name %q is an IP address, not a DNS name", name)
	}
	if len(name) > 253 || !nameRE.MatchString(name) {
		return fmt.Errorf("pki: party name %q is not a DNS name (letters, digits, hyphens, dots)", name)
	}
	return nil
}

// CAOptions configures InitCA.
type CAOptions struct {
	// CommonName of the CA; "splitguard test CA" when empty.
	CommonName string
	// Validity of the CA certificate; DefaultValidity when zero.
	Validity time.Duration
	// Force overwrites an existing CA in the directory.
	Force bool
}

// InitCA creates dir (if needed) and writes a new CA key and self-signed
// certificate into it. It refuses to overwrite an existing CA unless
// o.Force is set.
func InitCA(dir string, o CAOptions) error {
	if o.CommonName == "" {
		o.CommonName = "splitguard test CA"
	}
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pki: init CA: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if !o.Force {
		for _, p := range []string{certPath, keyPath} {
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("pki: init CA: %s exists (set CAOptions.Force, or pass --force, to replace the CA)", p)
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("pki: init CA: generating the key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: o.CommonName, Organization: []string{"splitguard"}},
		NotBefore:             now.Add(-ClockSkew),
		NotAfter:              now.Add(o.Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("pki: init CA: signing the certificate: %w", err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

// IssueOptions configures Issue.
type IssueOptions struct {
	// Hosts are extra subject alternative names: IP addresses become IP
	// SANs, anything else a DNS SAN. The party name is always a DNS SAN.
	Hosts []string
	// Validity of the certificate; DefaultValidity when zero. It is cut to
	// the CA's own expiry.
	Validity time.Duration
	// Force replaces an existing NAME.key and NAME.crt; without it Issue
	// refuses to overwrite them (the key may be the only copy).
	Force bool
}

// Issue writes NAME.crt and NAME.key into dir: a new ECDSA P-256 key and a
// certificate for it signed by the CA in dir, valid for TLS server and
// client authentication. It returns the two paths.
func Issue(dir, name string, o IssueOptions) (certPath, keyPath string, err error) {
	if err := CheckName(name); err != nil {
		return "", "", err
	}
	if name == "ca" {
		return "", "", errors.New(`pki: issue: party name "ca" is reserved for the CA's own files`)
	}
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if !o.Force {
		for _, p := range []string{KeyFile(dir, name), CertFile(dir, name)} {
			if _, err := os.Lstat(p); err == nil {
				return "", "", fmt.Errorf("pki: issue %s: %s exists (set IssueOptions.Force, or pass --force, to replace it)", name, p)
			}
		}
	}
	caCert, caKey, err := loadCA(dir)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("pki: issue %s: generating the key: %w", name, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"splitguard"}},
		NotBefore:    now.Add(-ClockSkew),
		NotAfter:     now.Add(o.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{name},
	}
	if tmpl.NotAfter.After(caCert.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	for _, h := range o.Hosts {
		if h == "" {
			return "", "", fmt.Errorf("pki: issue %s: empty host name", name)
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != name {
			if err := CheckName(h); err != nil {
				return "", "", fmt.Errorf("pki: issue %s: host: %w", name, err)
			}
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", "", fmt.Errorf("pki: issue %s: signing the certificate: %w", name, err)
	}
	certPath, keyPath = CertFile(dir, name), KeyFile(dir, name)
	if err := writeKey(keyPath, key); err != nil {
		return "", "", err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certs, err := readCerts(certPath)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: reading the CA key: %w", err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, nil, fmt.Errorf("pki: %s: no PEM PRIVATE KEY block", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", keyPath, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("pki: %s: the CA key is a %T, want ECDSA", keyPath, k)
	}
	if !certs[0].IsCA {
		return nil, nil, fmt.Errorf("pki: %s is not a CA certificate", certPath)
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, nil, fmt.Errorf("pki: %s does not match %s", keyPath, certPath)
	}
	return certs[0], key, nil
}

// readCerts parses every CERTIFICATE block of a PEM file.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: reading certificates: %w", err)
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("pki: %s: certificate %d: %w", path, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("pki: %s: no PEM CERTIFICATE block", path)
	}
	return certs, nil
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: drawing a serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("pki: encoding %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes one PEM block to a temporary file with the given mode and
// renames it into place, so a reader never sees a partial file and a key
// is never readable by others, not even briefly.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := pem.Encode(tmp, &pem.Block{Type: typ, Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	return nil
}

// Files names the PEM files of one side of a mutual-TLS connection.
type Files struct {
	Cert string // this party's certificate (may include intermediates)
	Key  string // this party's private key
	CA   string // the CA bundle the peer's certificate must chain to
}

// FilesIn returns the files of party name in a PKI directory made by
// InitCA and Issue.
func FilesIn(dir, name string) Files {
	return Files{Cert: CertFile(dir, name), Key: KeyFile(dir, name), CA: filepath.Join(dir, CACertFile)}
}

func (f Files) load() (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("pki: loading %s and %s: %w", f.Cert, f.Key, err)
	}
	cas, err := readCerts(f.CA)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	return cert, pool, nil
}

// ServerTLSConfig returns the TLS configuration of a server (the active
// party) that requires a client certificate chaining to f.CA, valid for
// client authentication and carrying peerName as a DNS name. TLS 1.3 only.
func ServerTLSConfig(f Files, peerName string) (*tls.Config, error) {
	cfg, pool, err := pinnedConfig(f, peerName, "server", "client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	// The chain is verified in VerifyConnection (against the same pool,
	// for client authentication), so that every refusal — an unknown CA
	// as well as a wrong name — goes through one function that callers
	// may wrap to log it.
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.ClientCAs = pool
	return cfg, nil
}

// ClientTLSConfig returns the TLS configuration of a client (the passive
// party) that presents its certificate and accepts only a server whose
// certificate chains to f.CA, is valid for server authentication and
// carries serverName as a DNS name, whatever address was dialled. TLS 1.3
// only.
func ClientTLSConfig(f Files, serverName string) (*tls.Config, error) {
	cfg, pool, err := pinnedConfig(f, serverName, "client", "server", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	cfg.ServerName = serverName
	return cfg, nil
}

// pinnedConfig is what both sides' TLS configurations share: TLS 1.3, f's
// certificate presented, and a VerifyConnection that accepts only a peer
// (of role peerRole) whose certificate chains to f.CA's pool for usage
// and carries peerName. side names the caller in errors. It returns the
// pool for the side's own settings.
func pinnedConfig(f Files, peerName, side, peerRole string, usage x509.ExtKeyUsage) (*tls.Config, *x509.CertPool, error) {
	if err := CheckName(peerName); err != nil {
		return nil, nil, fmt.Errorf("pki: %s TLS config: expected %s: %w", side, peerRole, err)
	}
	cert, pool, err := f.load()
	if err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		now := time.Now
		if cfg.Time != nil {
			now = cfg.Time
		}
		return verifyPeer(cs, pool, peerName, usage, peerRole, now())
	}
	return cfg, pool, nil
}

// verifyPeer verifies the peer's chain against the pool for the given
// usage and checks that the leaf carries want. Both sides run it in
// VerifyConnection: for the server it is the only verification of the
// client's chain; for the client it repeats crypto/tls's own, so that the
// pinning holds even if a caller loosens the standard checks. now is the
// time the certificates must be valid at (the configuration's Time).
func verifyPeer(cs tls.ConnectionState, pool *x509.CertPool, want string, usage x509.ExtKeyUsage, role string, now time.Time) error {
	leaf, err := verifyChain(cs, pool, usage, role, now)
	if err != nil {
		return err
	}
	if err := leaf.VerifyHostname(want); err != nil {
		return fmt.Errorf("pki: %s certificate %q is not for the expected peer %q (names %v)", role, leaf.Subject.CommonName, want, leaf.DNSNames)
	}
	return nil
}

// verifyChain verifies the peer's chain against the pool for the given
// usage at time now and returns the leaf certificate.
func verifyChain(cs tls.ConnectionState, pool *x509.CertPool, usage x509.ExtKeyUsage, role string, now time.Time) (*x509.Certificate, error) {
	if len(cs.PeerCertificates) == 0 {
		return nil, fmt.Errorf("pki: the %s presented no certificate", role)
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: now}); err != nil {
		return nil, fmt.Errorf("pki: %s certificate %q: %w", role, leaf.Subject.CommonName, err)
	}
	return leaf, nil
}

// PeerName returns the party name a verified peer certificate carries: its
// first DNS subject alternative name ("" when there is none).
func PeerName(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 || len(cs.PeerCertificates[0].DNSNames) == 0 {
		return ""
	}
	return cs.PeerCertificates[0].DNSNames[0]
}
