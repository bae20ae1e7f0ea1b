package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// toolboxVersion is the MCP Toolbox for Databases release bench/peers runs:
// the npm package @toolbox-sdk/server-linux-x64 that
// bench/peers/install-toolbox.sh installs (both read TOOLBOX_VERSION).
const toolboxVersion = "1.12.0"

// toolboxNoPassword is the password given to Toolbox's postgres source when
// the database URL has none: Toolbox refuses an empty one, and under trust
// authentication the server ignores whatever is sent.
const toolboxNoPassword = "unused-under-trust-auth"

// toolboxBinary is the installed Toolbox binary of the pinned version (or
// TOOLBOX_VERSION), or "" with the reason it is absent.
func toolboxBinary() (bin, version, why string) {
	version = strings.TrimPrefix(os.Getenv("TOOLBOX_VERSION"), "v")
	if version == "" {
		version = toolboxVersion
	}
	dir := filepath.Join(cacheDir(), "toolbox", version)
	bin = filepath.Join(dir, "node_modules", "@toolbox-sdk", "server-linux-x64", "bin", "toolbox")
	if _, err := os.Stat(bin); err != nil {
		return "", version, fmt.Sprintf("MCP Toolbox %s is not installed in %s (run bench/peers/install-toolbox.sh: an npm install of seconds)", version, dir)
	}
	return bin, version, ""
}

// toolboxArgs are the command-line arguments of Toolbox serving cfg on
// 127.0.0.1:port: no reloading of the file, no start-up check for a newer
// release (a network call), its default log level.
func toolboxArgs(cfg string, port int) []string {
	return []string{"--config", cfg, "--address", "127.0.0.1", "--port", fmt.Sprint(port), "--disable-reload", "--disable-version-check"}
}

// toolboxConfig is MCP Toolbox's configuration in its flat format (one YAML
// document per source or tool, `kind` naming which and `type` its type):
// one postgres source and one postgres-sql tool per operation.
func toolboxConfig(dbURL string, sp map[string]*spec) string {
	u, _ := url.Parse(dbURL)
	pass, _ := u.User.Password()
	if pass == "" {
		pass = toolboxNoPassword
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kind: source\nname: bench-pg\ntype: postgres\nhost: %s\nport: %q\ndatabase: %s\nuser: %s\npassword: %q\n",
		host, port, strings.TrimPrefix(u.Path, "/"), u.User.Username(), pass)
	ops := make([]string, 0, len(sp))
	for op := range sp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(&b, "---\nkind: tool\nname: bench_%s\ntype: postgres-sql\nsource: bench-pg\ndescription: the %s operation of parsemcp's peer benchmark\nstatement: %q\n", op, op, sp[op].literal)
	}
	return b.String()
}
