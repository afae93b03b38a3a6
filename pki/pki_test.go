package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mkPKI makes a CA in a temporary directory and issues the given parties.
func mkPKI(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := InitCA(dir, CAOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, _, err := Issue(dir, n, IssueOptions{Hosts: []string{"127.0.0.1", "localhost"}}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestIssuedCertificate(t *testing.T) {
	dir := mkPKI(t)
	certPath, keyPath, err := Issue(dir, "active", IssueOptions{Hosts: []string{"127.0.0.1", "::1", "active.example", "active"}, Validity: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(dir, CAKeyFile), 0o600},
		{keyPath, 0o600},
		{certPath, 0o644},
		{filepath.Join(dir, CACertFile), 0o644},
	} {
		st, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != tc.mode {
			t.Errorf("%s: mode %v, want %v", tc.path, st.Mode().Perm(), tc.mode)
		}
	}
	ca, err := readCerts(filepath.Join(dir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	leafs, err := readCerts(certPath)
	if err != nil {
		t.Fatal(err)
	}
	c := leafs[0]
	if !ca[0].IsCA || ca[0].PublicKeyAlgorithm != x509.ECDSA || ca[0].PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Errorf("CA: IsCA %v, key %v", ca[0].IsCA, ca[0].PublicKeyAlgorithm)
	}
	if err := c.CheckSignatureFrom(ca[0]); err != nil {
		t.Errorf("party certificate not signed by the CA: %v", err)
	}
	if c.IsCA {
		t.Error("party certificate is a CA")
	}
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage %v", c.ExtKeyUsage)
	}
	if !slices.Equal(c.DNSNames, []string{"active", "active.example"}) {
		t.Errorf("DNSNames %v, want [active active.example]", c.DNSNames)
	}
	if len(c.IPAddresses) != 2 || !c.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !c.IPAddresses[1].Equal(net.ParseIP("::1")) {
		t.Errorf("IPAddresses %v", c.IPAddresses)
	}
	if d := c.NotAfter.Sub(c.NotBefore); d != 48*time.Hour+ClockSkew {
		t.Errorf("validity %v, want 48h (+%v backdating)", d, ClockSkew)
	}
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		t.Errorf("key pair does not load: %v", err)
	}
}

func TestInitCARefusesOverwrite(t *testing.T) {
	dir := mkPKI(t)
	before, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	if err := InitCA(dir, CAOptions{}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second InitCA: %v, want an 'exists' error", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	if string(before) != string(after) {
		t.Fatal("CA changed by a refused InitCA")
	}
	if err := InitCA(dir, CAOptions{Force: true}); err != nil {
		t.Fatalf("forced InitCA: %v", err)
	}
}

func TestIssueErrors(t *testing.T) {
	dir := mkPKI(t)
	tests := []struct {
		name, dir, party string
		hosts            []string
		want             string
	}{
		{"path in name", dir, "../evil", nil, "not a DNS name"},
		{"empty name", dir, "", nil, "not a DNS name"},
		{"IP as name", dir, "127.0.0.1", nil, "IP address"},
		{"reserved", dir, "ca", nil, "reserved"},
		{"bad host", dir, "p", []string{"a b"}, "host"},
		{"no CA", t.TempDir(), "p", nil, "ca.crt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Issue(tc.dir, tc.party, IssueOptions{Hosts: tc.hosts})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Issue: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// handshake runs a TLS handshake over an in-memory pipe and returns the
// server's and the client's errors.
func handshake(t *testing.T, srv, cli *tls.Config) (error, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_ = a.SetDeadline(time.Now().Add(10 * time.Second))
	_ = b.SetDeadline(time.Now().Add(10 * time.Second))
	s, c := tls.Server(a, srv), tls.Client(b, cli)
	errc := make(chan error, 1)
	go func() {
		err := s.Handshake()
		if err != nil {
			a.Close() // unblock the client
		} else {
			_, err = s.Write([]byte("k"))
		}
		errc <- err
	}()
	cerr := c.Handshake()
	if cerr == nil {
		// TLS 1.3 client handshakes finish before the server has checked
		// the client certificate: read the server's byte (or its alert).
		var buf [1]byte
		_, cerr = c.Read(buf[:])
	}
	if cerr != nil {
		b.Close()
	}
	return <-errc, cerr
}

func TestMutualTLSPinning(t *testing.T) {
	dir := mkPKI(t, "active", "passive", "mallory")
	other := mkPKI(t, "passive", "active")
	srv := func(d, name, peer string) *tls.Config {
		c, err := ServerTLSConfig(FilesIn(d, name), peer)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cli := func(d, name, server string) *tls.Config {
		c, err := ClientTLSConfig(FilesIn(d, name), server)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	foreign, err := ClientTLSConfig(Files{Cert: CertFile(other, "passive"), Key: KeyFile(other, "passive"), CA: filepath.Join(dir, CACertFile)}, "active")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name             string
		server, client   *tls.Config
		wantSrv, wantCli string // "" = success
	}{
		{"both pinned", srv(dir, "active", "passive"), cli(dir, "passive", "active"), "", ""},
		{"client has the wrong name", srv(dir, "active", "passive"), cli(dir, "mallory", "active"), `not for the expected peer "passive"`, "bad certificate"},
		// The client trusts the server's CA but its own certificate comes
		// from another CA.
		{"client from another CA", srv(dir, "active", "passive"), foreign, "unknown authority", "bad certificate"},
		// The client trusts only the other CA: it rejects the server first.
		{"client trusting another CA", srv(dir, "active", "passive"), cli(other, "passive", "active"), "bad certificate", "unknown authority"},
		{"server has the wrong name", srv(dir, "mallory", "passive"), cli(dir, "passive", "active"), "bad certificate", "not active"},
		{"server from another CA", srv(other, "active", "passive"), cli(dir, "passive", "active"), "bad certificate", "unknown authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			serr, cerr := handshake(t, tc.server, tc.client)
			for _, c := range []struct {
				side string
				err  error
				want string
			}{{"server", serr, tc.wantSrv}, {"client", cerr, tc.wantCli}} {
				switch {
				case c.want == "" && c.err != nil:
					t.Errorf("%s: unexpected error %v", c.side, c.err)
				case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
					t.Errorf("%s: error %v, want one containing %q", c.side, c.err, c.want)
				}
			}
		})
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := mkPKI(t, "active")
	if _, err := ServerTLSConfig(FilesIn(dir, "active"), "bad name"); err == nil {
		t.Error("ServerTLSConfig accepted an invalid peer name")
	}
	if _, err := ClientTLSConfig(FilesIn(dir, "nobody"), "active"); err == nil || !strings.Contains(err.Error(), "nobody.crt") {
		t.Errorf("ClientTLSConfig with missing files: %v", err)
	}
	c, err := ServerTLSConfig(FilesIn(dir, "active"), "passive")
	if err != nil {
		t.Fatal(err)
	}
	if c.MinVersion != tls.VersionTLS13 || c.ClientAuth != tls.RequireAnyClientCert || c.VerifyConnection == nil {
		t.Errorf("MinVersion %x ClientAuth %v", c.MinVersion, c.ClientAuth)
	}
}
