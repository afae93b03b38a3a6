package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{nil, "(no build information)"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3, go1.26.0"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0a10f49abc"}, {Key: "vcs.time", Value: "2026-11-25T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel), revision 0a10f49abc (modified), committed 2026-11-25T12:00:00Z, go1.26.0"},
		{&debug.BuildInfo{}, "(unknown)"},
	} {
		if got := versionOf(c.info); got != c.want {
			t.Errorf("versionOf(%+v) = %q, want %q", c.info, got, c.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	info, _ := debug.ReadBuildInfo()
	want := "splitguard " + versionOf(info) + "\n"
	if out.String() != want || !strings.Contains(want, info.GoVersion) {
		t.Errorf("--version printed %q, want %q", out.String(), want)
	}
}
