package main

import (
	"cmp"
	"runtime/debug"
	"strings"
)

// version describes this build for `mcpe-server version`, --version and
// the MCP serverInfo: the module version (a `go install ...@v1.2.3` build
// says v1.2.3), and, for a build from a clone, the commit and whether the
// tree was modified.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module information)"
	}
	return describeBuild(bi)
}

// describeBuild is version for the build information bi.
func describeBuild(bi *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	v := bi.Main.Version
	if v == "(devel)" {
		v = ""
	}
	var commit []string
	if rev := settings["vcs.revision"]; rev != "" {
		commit = append(commit, "commit "+rev[:min(12, len(rev))])
		if settings["vcs.modified"] == "true" {
			commit = append(commit, "modified")
		}
		if t := settings["vcs.time"]; t != "" {
			commit = append(commit, t)
		}
	}
	if len(commit) == 0 {
		return cmp.Or(v, "devel (built without version control information, e.g. with -buildvcs=false)")
	}
	return cmp.Or(v, "devel") + " (" + strings.Join(commit, ", ") + ")"
}
