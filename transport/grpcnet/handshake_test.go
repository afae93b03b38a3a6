package grpcnet

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/pki"
)

// TestRefusedHandshakesLogged: a client without a certificate, a client
// limited to TLS 1.2 and a connection that never speaks are each refused
// and logged by the server (none of them reached its log before), the
// silent one after Timeouts.Handshake instead of gRPC's 120 s.
func TestRefusedHandshakesLogged(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	var logs syncBuffer
	s := startServer(t, ServerOptions{TLS: p.server(t), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Timeouts: Timeouts{Handshake: 300 * time.Millisecond}})
	caPEM, err := os.ReadFile(p.dir + "/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	withCert, err := tls.LoadX509KeyPair(pki.CertFile(p.dir, "passive"), pki.KeyFile(p.dir, "passive"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  *tls.Config // nil: a TCP connection that sends nothing
	}{
		{"no client certificate", &tls.Config{RootCAs: roots, ServerName: "active", NextProtos: []string{"h2"}}},
		{"TLS 1.2", &tls.Config{RootCAs: roots, ServerName: "active", MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{withCert}, NextProtos: []string{"h2"}}},
		{"silent connection", nil},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if tc.cfg != nil {
				tc2 := tls.Client(conn, tc.cfg)
				err = tc2.Handshake()
				if err == nil {
					// TLS 1.3 reports a refused client certificate on the
					// first read.
					_, err = tc2.Read(make([]byte, 1))
				}
			} else {
				_, err = conn.Read(make([]byte, 1))
			}
			if err == nil {
				t.Fatal("the server answered")
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server held the connection: %v", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for strings.Count(logs.String(), "refused a connection at the TLS handshake") < i+1 {
				if time.Now().After(deadline) {
					t.Fatalf("not logged; log:\n%s", logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
