package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
)

// plantedMark is in every planted secret: it must appear in no output.
const plantedMark = "planted"

// servePlanted holds a planted value for every serve flag that is, or
// carries, a secret: whole-value keys and secrets, and the passwords
// inside the addresses of the store, Redis, the MQTT broker and the
// authorization server. The addresses point nowhere reachable.
var servePlanted = map[string]string{
	"api-key":                 "planted-apikey-1",
	"oauth-client-secret":     "planted-clientsecret-2",
	"parse-master-key":        "planted-masterkey-3",
	"parse-rest-key":          "planted-restkey-4",
	"parse-js-key":            "planted-jskey-5",
	"store":                   "postgres://parsemcp:planted-pgpass-6@127.0.0.1:1/app?sslmode=disable",
	"redis":                   "redis://default:planted-redispass-7@127.0.0.1:1/0",
	"federation":              "mqtt://platform:planted-mqttpass-8@127.0.0.1:1",
	"oauth-jwks-url":          "https://as.example/jwks?access_token=planted-jwkstoken-9",
	"oauth-introspection-url": "https://rs:planted-introspect-10@as.example/introspect",
	"oauth-issuer":            "https://as.example/?token=planted-issuertoken-11",
	"oauth-audience":          "https://aud:planted-audience-12@api.example",
}

// notSecret are serve flags whose names look like a secret's but whose
// values are not one (each with its reason).
var notSecret = map[string]string{
	"oauth-client-id":              "an identifier",
	"oauth-resource":               "this server's public URI",
	"tokens":                       "\"store\" or the path of the token file (the tokens are hashed)",
	"redis-prefix":                 "a key prefix",
	"federation-broker-addr":       "a loopback listen address",
	"federation-client-id":         "an identifier",
	"federation-platform":          "a topic level",
	"federation-prefix":            "a topic level",
	"federation-username":          "a user name (the password is env PARSEMCP_FEDERATION_PASSWORD)",
	"federation-timeout":           "a duration",
	"federation-max-subscriptions": "a count",
	"federation-subscription-ttl":  "a duration",
	"oauth-clock-skew":             "a duration",
	"oauth-scopes":                 "scope names",
	"tool-response-budget":         "token counts",
	"require-header":               "a header name",
	"header-timeout":               "a duration",
	"preauth-limit":                "a rate",
}

// secretLooking matches flag names that may hold a secret.
var secretLooking = regexp.MustCompile(`(?i)pass|secret|key|token|url|dsn|store|redis|federation|issuer|broker|oauth|header|credential|auth`)

// `parsemcp config` masks every secret of serve's flags, whichever source
// sets it (flag, PARSEMCP_* environment, --config file), and so does every
// command's --help (defaults read from the environment); the lines are
// there, masked, not dropped. A new serve flag whose name looks like a
// secret's fails this test until it is planted here or listed as not one.
func TestConfigMasksEverySecret(t *testing.T) {
	stdout, stderr, code := run(t, nil, "config")
	if code != 0 {
		t.Fatalf("config: exit %d\n%s", code, stderr)
	}
	// The default clock skew on access tokens, as docs/OPERATIONS.md says.
	if !strings.Contains(stdout, "\noauth-clock-skew: 30s # default\n") {
		t.Errorf("config: want the default OAuth clock skew of 30s:\n%s", stdout)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		name, _, _ := strings.Cut(line, ":")
		if _, planted := servePlanted[name]; !planted && notSecret[name] == "" && secretLooking.MatchString(name) {
			t.Errorf("serve flag --%s looks like a secret: plant a value in servePlanted or say why it is not one in notSecret", name)
		}
	}

	var flags, env []string
	file := ""
	for name, v := range servePlanted {
		flags = append(flags, "--"+name, v)
		env = append(env, flagconfig.EnvName(EnvPrefix, name)+"="+v)
		file += name + ": " + `"` + v + `"` + "\n"
	}
	cfg := filepath.Join(t.TempDir(), "parsemcp.yaml")
	if err := os.WriteFile(cfg, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	for source, c := range map[string]struct {
		env  []string
		args []string
	}{
		"flag": {nil, append([]string{"config"}, flags...)},
		"env":  {env, []string{"config"}},
		"file": {nil, []string{"config", "--config", cfg}},
	} {
		t.Run(source, func(t *testing.T) {
			stdout, stderr, code := run(t, c.env, c.args...)
			if code != 0 {
				t.Fatalf("config: exit %d\n%s", code, stderr)
			}
			if strings.Contains(stdout+stderr, plantedMark) {
				t.Errorf("config shows a planted secret:\n%s%s", stdout, stderr)
			}
			for name := range servePlanted {
				i := strings.Index(stdout, "\n"+name+":")
				if i < 0 {
					t.Errorf("config lacks %s:\n%s", name, stdout)
					continue
				}
				line, _, _ := strings.Cut(stdout[i+1:], "\n")
				want := source
				if source == "env" { // the source names the variable
					want = "env " + flagconfig.EnvName(EnvPrefix, name)
				}
				if !strings.Contains(line, flagconfig.Mask) || !strings.HasSuffix(line, "# "+want) {
					t.Errorf("config line %q: want the value masked, from %s", line, source)
				}
			}
		})
	}
	// A keyword/value connection string (PostgreSQL's DSN form).
	stdout, _, _ = run(t, nil, "config", "--store", "host=db user=parsemcp password=planted-kvpass dbname=app")
	if strings.Contains(stdout, plantedMark) || !strings.Contains(stdout, "password="+flagconfig.Mask) {
		t.Errorf("config shows the DSN's password:\n%s", stdout)
	}
	// Every command's help, with the defaults its flags read from the
	// environment.
	helpEnv := append(slices.Clone(env), "PARSEMCP_AGENT_BROKER=mqtt://agent:planted-broker@127.0.0.1:1",
		"PARSEMCP_SERVER=http://u:planted-server@127.0.0.1:1/mcp")
	for _, cmd := range []string{"config", "serve", "stdio", "call", "chat", "console", "ask", "agent", "token", "migrate", "audit-metadata", "demo"} {
		stdout, stderr, _ := run(t, helpEnv, cmd, "--help")
		if strings.Contains(stdout+stderr, plantedMark) {
			t.Errorf("%s --help shows a planted secret:\n%s%s", cmd, stdout, stderr)
		}
	}
}

// serve at -v, with every secret planted that it can run with (the
// store's password aside: its store must open), logs none of them, in
// text or JSON: the Redis and MQTT addresses it cannot reach are logged
// and retried, the API key authenticates calls, the Parse keys and the
// broker password sit in the environment.
func TestServeLogsNoSecrets(t *testing.T) {
	db := fixtureDB(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			env := []string{"PARSEMCP_FEDERATION_PASSWORD=planted-fedpass", "PARSEMCP_APPROVAL_SECRET=planted-approval"}
			for _, name := range []string{"api-key", "parse-master-key", "parse-rest-key", "parse-js-key", "redis", "federation"} {
				env = append(env, flagconfig.EnvName(EnvPrefix, name)+"="+servePlanted[name])
			}
			s := startServe(t, env, "--store", "sqlite:"+db, "--verbose", "--log-format", format, "--audit", "stderr")
			hc := &http.Client{Transport: headersTransport{"Authorization": "Bearer " + servePlanted["api-key"]}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, nil)
			if err != nil {
				t.Fatal(err)
			}
			callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
			cs.Close()
			// A refused key is logged as refused, not shown.
			resp := initializeWith(t, s.url, "planted-wrongkey")
			if resp.StatusCode != 401 {
				t.Errorf("a wrong key: %s", resp.Status)
			}
			s.cmd.Process.Signal(os.Interrupt)
			s.cmd.Wait()
			out := s.stderr.String()
			if i := strings.Index(out, plantedMark); i >= 0 {
				t.Errorf("the log shows a planted secret at %q:\n%s", out[max(0, i-80):min(len(out), i+40)], out)
			}
			for _, want := range []string{"federation on", "platform:" + flagconfig.Mask + "@127.0.0.1:1"} {
				if !strings.Contains(out, want) {
					t.Errorf("the log lacks %q (the test proves nothing without it):\n%s", want, out)
				}
			}
		})
	}
}

// A command that cannot start says why without the secret inside the
// address it could not use: an unreachable or malformed store, Redis or
// broker address, and a keyword/value DSN it does not take.
func TestStartErrorsShowNoSecrets(t *testing.T) {
	db := fixtureDB(t)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("agents: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"postgres unreachable":  {"serve", "--store", servePlanted["store"]},
		"postgres ?password":    {"serve", "--store", "postgres://parsemcp@127.0.0.1:1/app?password=planted-q"},
		"postgres malformed":    {"serve", "--store", "postgres://parsemcp:planted-pg@127.0.0.1:xx/app"},
		"keyword DSN":           {"serve", "--store", "host=127.0.0.1 user=parsemcp password=planted-kv"},
		"redis malformed":       {"serve", "--store", "sqlite:" + db, "--redis", "redis://default:planted-r@127.0.0.1:xx/0"},
		"federation malformed":  {"serve", "--store", "sqlite:" + db, "--federation", "mqtt://platform:planted-m@127.0.0.1:xx"},
		"stdio, postgres":       {"stdio", "-v", "--store", servePlanted["store"]},
		"call, postgres":        {"call", "count_objects", "-v", "--store", servePlanted["store"]},
		"migrate, postgres":     {"migrate", "--store", servePlanted["store"]},
		"token list, postgres":  {"token", "list", "--store", servePlanted["store"]},
		"audit-metadata, store": {"audit-metadata", "--policy", pol, "--store", servePlanted["store"]},
	} {
		t.Run(name, func(t *testing.T) {
			if args[0] == "serve" {
				args = append(slices.Clone(args), "--addr", "127.0.0.1:0")
			}
			stdout, stderr, code := run(t, nil, args...)
			if code == 0 {
				t.Fatalf("started:\n%s%s", stdout, stderr)
			}
			if strings.Contains(stdout+stderr, plantedMark) {
				t.Errorf("shows a planted secret:\n%s%s", stdout, stderr)
			}
			if !strings.Contains(stderr, flagconfig.Mask) {
				t.Errorf("does not name the address it could not use (masked):\n%s", stderr)
			}
		})
	}
}
