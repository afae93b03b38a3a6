package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const chromiumPath = "/usr/bin/chromium"

// chromium runs headless Chromium with networking features off and a
// throw-away profile, returning its stdout.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	profile := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + profile}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// TestBrowserReport builds the report of a hand-made sweep, opens it in
// headless Chromium and checks, in the DOM after the page's own script
// ran, that every figure decoded and the table is there. It also writes a
// screenshot (kept in $REPORT_SCREENSHOT when set).
func TestBrowserReport(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped with -short")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s (install: apt-get install -y chromium)", chromiumPath)
	}
	dir := t.TempDir()
	writeFakeSweep(t, dir, 500)
	index, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + index
	dom := chromium(t, "--virtual-time-budget=5000", "--dump-dom", url)
	body := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
	if !strings.Contains(body, `data-figures="ok"`) {
		t.Errorf("figures did not all load: %s", body)
	}
	m := regexp.MustCompile(`data-figure-count="(\d+)"`).FindStringSubmatch(body)
	if m == nil || m[1] == "0" {
		t.Errorf("no figure counted: %s", body)
	}
	if !strings.Contains(body, `data-table-rows="10"`) {
		t.Errorf("table rows: %s, want 10", body)
	}
	if !strings.Contains(dom, `id="runs-table"`) || !strings.Contains(dom, "marvell-s1-s2") {
		t.Error("the runs table is missing from the DOM")
	}
	shot := os.Getenv("REPORT_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "report.png")
	}
	chromium(t, "--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1400,2400", "--screenshot="+shot, url)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
}
