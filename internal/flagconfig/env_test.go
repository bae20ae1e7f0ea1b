package flagconfig_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
)

func envSource(name string) flagconfig.Source {
	return flagconfig.Source{Kind: flagconfig.FromEnv, Var: name}
}

// aliased is newFlags with the reference guide's name for --api-key and a
// declared variable for --store.
func aliased() (*pflag.FlagSet, *flags) {
	fs, f := newFlags()
	flagconfig.Alias(fs, "api-key", "MCP_API_KEY")
	flagconfig.Env(fs, "store", "PARSEMCP_DATA")
	flagconfig.Alias(fs, "store", "PARSE_DATA", "OTHER_DATA")
	return fs, f
}

// The order is: the command line, the flag's own variable, its aliases in
// the order declared, the file, the default.
func TestAliasPrecedence(t *testing.T) {
	file := writeFile(t, "api-key: from-file\nstore: sqlite:file.db\n")
	for _, c := range []struct {
		name      string
		args, env []string
		key       string
		keySrc    flagconfig.Source
	}{
		{"alias alone", nil, []string{"MCP_API_KEY=k-alias"}, "k-alias", envSource("MCP_API_KEY")},
		{"ours over the alias", nil, []string{"MCP_API_KEY=k-alias", "PARSEMCP_API_KEY=k-ours"}, "k-ours", envSource("PARSEMCP_API_KEY")},
		{"the flag over both", []string{"--api-key", "k-flag"}, []string{"MCP_API_KEY=k-alias", "PARSEMCP_API_KEY=k-ours"}, "k-flag", flagconfig.Source{Kind: flagconfig.FromFlag}},
		{"an empty variable is unset", nil, []string{"PARSEMCP_API_KEY=", "MCP_API_KEY=k-alias"}, "k-alias", envSource("MCP_API_KEY")},
		{"the alias over the file", nil, []string{"MCP_API_KEY=k-alias"}, "k-alias", envSource("MCP_API_KEY")},
		{"the file without variables", nil, nil, "from-file", flagconfig.Source{Kind: flagconfig.FromFile}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, f := aliased()
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			src, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", File: file, Skip: []string{"config"}, Environ: environ(c.env...)})
			if err != nil {
				t.Fatal(err)
			}
			if f.apiKey != c.key || src["api-key"] != c.keySrc {
				t.Errorf("api-key = %q from %v, want %q from %v", f.apiKey, src["api-key"], c.key, c.keySrc)
			}
		})
	}
}

// A declared variable replaces the one the prefix makes; aliases are
// tried in the order declared.
func TestDeclaredVariable(t *testing.T) {
	fs, f := aliased()
	src, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", Environ: environ("PARSEMCP_STORE=sqlite:made.db", "OTHER_DATA=sqlite:other.db", "PARSE_DATA=sqlite:parse.db")})
	if err != nil {
		t.Fatal(err)
	}
	if f.store != "sqlite:parse.db" || src["store"] != envSource("PARSE_DATA") {
		t.Errorf("store = %q from %v, want the first alias's (PARSEMCP_STORE is not its variable)", f.store, src["store"])
	}
	fs, f = aliased()
	if _, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", Environ: environ("PARSE_DATA=sqlite:parse.db", "PARSEMCP_DATA=sqlite:ours.db")}); err != nil || f.store != "sqlite:ours.db" {
		t.Errorf("store = %q (%v), want the declared variable's", f.store, err)
	}
	if got := flagconfig.EnvNames(fs.Lookup("store"), "PARSEMCP_"); !slices.Equal(got, []string{"PARSEMCP_DATA", "PARSE_DATA", "OTHER_DATA"}) {
		t.Errorf("EnvNames(store) = %v", got)
	}
}

// Without a prefix only declared variables are read; Env with no name
// takes a flag's variable away.
func TestNoPrefixReadsDeclaredOnly(t *testing.T) {
	fs, f := aliased()
	flagconfig.Env(fs, "max-inflight")
	env := environ("PARSEMCP_ADDR=10.0.0.1:1", "MCP_API_KEY=k", "PARSEMCP_MAX_INFLIGHT=9", "PARSEMCP_DATA=sqlite:d.db")
	if _, err := flagconfig.Apply(fs, flagconfig.Options{Environ: env}); err != nil {
		t.Fatal(err)
	}
	if f.addr != "127.0.0.1:8787" || f.apiKey != "k" || f.store != "sqlite:d.db" || f.inflight != 4 {
		t.Errorf("addr %q api-key %q store %q max-inflight %d: want the default addr, the alias's key, the declared store", f.addr, f.apiKey, f.store, f.inflight)
	}
	fs, f = aliased()
	flagconfig.Env(fs, "max-inflight")
	if _, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", Environ: env}); err != nil || f.inflight != 4 || f.addr != "10.0.0.1:1" {
		t.Errorf("max-inflight %d addr %q (%v): want the default (no variable) and the prefixed addr", f.inflight, f.addr, err)
	}
}

// A dotenv file adds what the environment lacks; the environment wins;
// the sources name the file; a missing file is no error unless required.
func TestDotEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	body := "# the guide's names\nMCP_API_KEY=dotenv-secret-1\nexport PARSEMCP_TEST_DOTENV_MAX_INFLIGHT=6\nPARSEMCP_TEST_DOTENV_ADDR=\"10.1.1.1:1\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PARSEMCP_TEST_DOTENV_ADDR", "10.2.2.2:2")
	t.Setenv("MCP_API_KEY", "") // empty counts as unset: the file sets it
	os.Unsetenv("PARSEMCP_TEST_DOTENV_MAX_INFLIGHT")
	t.Cleanup(func() { os.Unsetenv("PARSEMCP_TEST_DOTENV_MAX_INFLIGHT") })
	d, err := flagconfig.LoadDotEnv(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Set, []string{"MCP_API_KEY", "PARSEMCP_TEST_DOTENV_MAX_INFLIGHT"}) {
		t.Errorf("set %v, want the two variables the environment lacked", d.Set)
	}
	if os.Getenv("PARSEMCP_TEST_DOTENV_ADDR") != "10.2.2.2:2" || os.Getenv("MCP_API_KEY") != "dotenv-secret-1" {
		t.Errorf("environment after the file: addr %q key %q", os.Getenv("PARSEMCP_TEST_DOTENV_ADDR"), os.Getenv("MCP_API_KEY"))
	}
	fs, f := aliased()
	src, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_TEST_DOTENV_", DotEnv: d})
	if err != nil {
		t.Fatal(err)
	}
	if f.addr != "10.2.2.2:2" || src["addr"].String() != "env PARSEMCP_TEST_DOTENV_ADDR" {
		t.Errorf("addr = %q from %v, want the environment's", f.addr, src["addr"])
	}
	if f.inflight != 6 || src["max-inflight"].String() != path+" PARSEMCP_TEST_DOTENV_MAX_INFLIGHT" {
		t.Errorf("max-inflight = %d from %v, want the file's", f.inflight, src["max-inflight"])
	}
	var b strings.Builder
	if err := flagconfig.Print(&b, fs, src, "config"); err != nil {
		t.Fatal(err)
	}
	if want := "api-key: '" + flagconfig.Mask + "' # " + path + " MCP_API_KEY"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "dotenv-secret-1") {
		t.Errorf("printed configuration: want %q and no secret:\n%s", want, b.String())
	}

	if d, err := flagconfig.LoadDotEnv(filepath.Join(dir, "none.env"), false); d != nil || err != nil {
		t.Errorf("a missing optional file: %v %v", d, err)
	}
	if _, err := flagconfig.LoadDotEnv(filepath.Join(dir, "none.env"), true); err == nil || !strings.Contains(err.Error(), "none.env") {
		t.Errorf("a missing required file: %v", err)
	}
}

// A dotenv file that does not parse is refused without quoting it.
func TestDotEnvMalformedQuotesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("MCP_API_KEY=\"open-quote-secret\nOTHER=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := flagconfig.LoadDotEnv(path, false)
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "open-quote-secret") {
		t.Fatalf("err = %v: want the file named and the secret left out", err)
	}
}
