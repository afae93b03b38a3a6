package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	rootOptions = append(rootOptions, func(root *cobra.Command) {
		info, _ := debug.ReadBuildInfo()
		root.Version = versionOf(info)
		root.SetVersionTemplate("splitguard {{.Version}}\n")
	})
}

// versionOf describes a build: the module version ("(devel)" for a build
// from a checkout), the VCS revision and time and whether the tree was
// modified (stamped by `go build` in a git checkout), and the Go version.
func versionOf(info *debug.BuildInfo) string {
	if info == nil {
		return "(no build information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(unknown)"
	}
	set := map[string]string{}
	for _, s := range info.Settings {
		set[s.Key] = s.Value
	}
	var parts []string
	if r := set["vcs.revision"]; r != "" {
		rev := "revision " + r
		if set["vcs.modified"] == "true" {
			rev += " (modified)"
		}
		parts = append(parts, rev)
	}
	if t := set["vcs.time"]; t != "" {
		parts = append(parts, "committed "+t)
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	if len(parts) == 0 {
		return v
	}
	return fmt.Sprintf("%s, %s", v, strings.Join(parts, ", "))
}
