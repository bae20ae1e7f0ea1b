package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The environment of a command bridged by `parsemcp agent -- COMMAND`.
// It starts clean: the agent's own environment holds its broker
// credentials (PARSEMCP_AGENT_PASSWORD) and whatever else its operator
// keeps there, and a bridged server may show its environment to any
// caller (server-everything's get-env tool does). It inherits only the
// variables a program needs to run at all, none of which carries a
// secret by convention, and receives whatever the operator passes
// explicitly with --env and --env-file.

// bridgeBaseEnv are the variables a bridged command inherits unasked
// (and every LC_*): PATH to find programs (npx finds node, node finds
// npm), HOME and the user's names for per-user caches and configuration
// (npm's ~/.npm), LANG and LC_* for text encoding, TZ for local time,
// TMPDIR for temporary files. On Windows, the variables without which
// programs (node among them) fail to start or find their profile.
func bridgeBaseEnv() []string {
	if runtime.GOOS == "windows" {
		return []string{"PATH", "PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "TEMP", "TMP", "USERPROFILE", "USERNAME",
			"HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMFILES", "PROCESSOR_ARCHITECTURE"}
	}
	return []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TZ", "TMPDIR"}
}

// agentSecretEnv is never handed to a bridged command, even when asked.
const agentSecretEnv = "PARSEMCP_AGENT_PASSWORD"

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// bridgeEnv builds a bridged command's environment from this process's
// (environ, as os.Environ gives it): the base, then each --env-file's lines in order, then each
// --env (NAME copies this process's NAME; NAME=VALUE sets it); a later
// setting of a name wins.
func bridgeEnv(environ []string, envs, files []string) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := vals[name]; !ok {
			order = append(order, name)
		}
		vals[name] = value
	}
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc(bridgeBaseEnv(), func(b string) bool { return b == name || b == "LC_*" && strings.HasPrefix(name, "LC_") }) {
			set(name, v)
		}
	}
	for _, f := range files {
		lines, err := readEnvFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			set(l[0], l[1])
		}
	}
	for _, e := range envs {
		name, value, hasValue := strings.Cut(e, "=")
		if err := checkEnvName(name); err != nil {
			return nil, fmt.Errorf("--env %q: %w", e, err)
		}
		if !hasValue {
			v, ok := lookup(environ, name)
			if !ok {
				return nil, fmt.Errorf("--env %s: %s is not set in this environment (pass NAME=VALUE to set it)", name, name)
			}
			value = v
		}
		set(name, value)
	}
	out := make([]string, 0, len(order))
	for _, name := range order {
		out = append(out, name+"="+vals[name])
	}
	return out, nil
}

func checkEnvName(name string) error {
	switch {
	case !envNameRE.MatchString(name):
		return fmt.Errorf("%q is not an environment variable name", name)
	case name == agentSecretEnv:
		return fmt.Errorf("the agent's broker password is never handed to the bridged command")
	}
	return nil
}

// readEnvFile reads a dotenv file: NAME=VALUE lines (an optional
// "export " before NAME), blank lines and # comments. A VALUE in double
// quotes takes Go's escapes (\n, \", \\); one in single quotes is taken
// as written; an unquoted one is the rest of the line, trimmed.
func readEnvFile(path string) ([][2]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--env-file: %w", err)
	}
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%s:%d: want NAME=VALUE", path, n)
		}
		if err := checkEnvName(name); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		value = strings.TrimSpace(value)
		switch {
		case len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"':
			if value, err = strconv.Unquote(value); err != nil {
				return nil, fmt.Errorf("%s:%d: %s: bad double-quoted value: %w", path, n, name, err)
			}
		case len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'':
			value = value[1 : len(value)-1]
		}
		out = append(out, [2]string{name, value})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--env-file %s: %w", path, err)
	}
	return out, nil
}

// lookup finds name in environ (the last setting wins, as in getenv).
func lookup(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(environ[i], "="); n == name {
			return v, true
		}
	}
	return "", false
}
