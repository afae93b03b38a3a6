package pki

import (
	"strings"
	"testing"
)

func TestMatchNameAndServerTLSConfigFor(t *testing.T) {
	dir := mkPKI(t, "active", "bank-a", "bank-b")
	if _, _, err := Issue(dir, "twin", IssueOptions{Hosts: []string{"bank-a", "bank-b"}}); err != nil {
		t.Fatal(err)
	}
	expected := []string{"bank-a", "bank-b", "bank-c"}
	for _, tc := range []struct {
		cert string
		want int
		err  string
	}{
		{"bank-a", 0, ""},
		{"bank-b", 1, ""},
		{"active", -1, "none of the expected peers"},
		{"twin", -1, `two of the expected peers' names, "bank-a" and "bank-b"`},
	} {
		certs, err := readCerts(CertFile(dir, tc.cert))
		if err != nil {
			t.Fatal(err)
		}
		k, err := MatchName(certs[0], expected)
		if k != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %d, %v; want %d, %q", tc.cert, k, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		names []string
		err   string
	}{
		{nil, "no client names"},
		{[]string{"bank-a", "bank-a"}, `"bank-a" expected twice`},
		{[]string{"bank-a", "Bad Name"}, "expected client 1"},
	} {
		if _, err := ServerTLSConfigFor(FilesIn(dir, "active"), tc.names); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: %v, want %q", tc.names, err, tc.err)
		}
	}
	cfg, err := ServerTLSConfigFor(FilesIn(dir, "active"), expected)
	if err != nil || cfg.VerifyConnection == nil || cfg.ClientCAs == nil {
		t.Fatalf("config %v, %v", cfg, err)
	}
}
