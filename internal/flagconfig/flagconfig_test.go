package flagconfig_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
)

type flags struct {
	addr     string
	inflight int
	wait     time.Duration
	origins  []string
	timeout  map[string]string
	verbose  bool
	apiKey   string
	store    string
}

func newFlags() (*pflag.FlagSet, *flags) {
	var f flags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8787", "")
	fs.IntVar(&f.inflight, "max-inflight", 4, "")
	fs.DurationVar(&f.wait, "admission-wait", time.Second, "")
	fs.StringSliceVar(&f.origins, "allowed-origin", []string{"default.example"}, "")
	fs.StringToStringVar(&f.timeout, "timeout", nil, "")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "")
	fs.StringVar(&f.apiKey, "api-key", "", "")
	fs.StringVar(&f.store, "store", "", "")
	fs.String("config", "", "")
	return fs, &f
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "parsemcp.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func environ(kv ...string) func() []string { return func() []string { return kv } }

func TestPrecedenceFlagEnvFile(t *testing.T) {
	file := writeFile(t, `addr: 0.0.0.0:9000
max-inflight: 9
admission-wait: 3s
allowed-origin: [a.example, b.example]
timeout:
  query_class: 10s
  aggregate: 2m
verbose: true
`)
	fs, f := newFlags()
	if err := fs.Parse([]string{"--addr", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	src, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", File: file, Skip: []string{"config"},
		Environ: environ("PARSEMCP_ADDR=10.0.0.1:2", "PARSEMCP_MAX_INFLIGHT=7", "PARSEMCP_AGENT_PASSWORD=x", "OTHER_ADDR=y")})
	if err != nil {
		t.Fatal(err)
	}
	if f.addr != "127.0.0.1:1" || src["addr"].Kind != flagconfig.FromFlag {
		t.Errorf("addr = %q from %s, want the flag's", f.addr, src["addr"])
	}
	if f.inflight != 7 || src["max-inflight"] != (flagconfig.Source{Kind: flagconfig.FromEnv, Var: "PARSEMCP_MAX_INFLIGHT"}) {
		t.Errorf("max-inflight = %d from %s, want the environment's 7", f.inflight, src["max-inflight"])
	}
	if f.wait != 3*time.Second || src["admission-wait"].Kind != flagconfig.FromFile {
		t.Errorf("admission-wait = %s from %s, want the file's 3s", f.wait, src["admission-wait"])
	}
	if strings.Join(f.origins, ",") != "a.example,b.example" {
		t.Errorf("allowed-origin = %v, want the file's list replacing the default", f.origins)
	}
	if f.timeout["query_class"] != "10s" || f.timeout["aggregate"] != "2m" || len(f.timeout) != 2 {
		t.Errorf("timeout = %v", f.timeout)
	}
	if !f.verbose {
		t.Error("verbose not set from the file")
	}
	if f.store != "" || src["store"].Kind != flagconfig.FromDefault {
		t.Errorf("store = %q from %s, want the default", f.store, src["store"])
	}
}

func TestUnknownKeyRefusedWithLine(t *testing.T) {
	file := writeFile(t, "addr: 127.0.0.1:0\n\nmax-inflihgt: 3\n")
	fs, _ := newFlags()
	_, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", File: file, Skip: []string{"config"}, Environ: environ()})
	if err == nil || !strings.Contains(err.Error(), file+":3:") || !strings.Contains(err.Error(), "max-inflihgt") {
		t.Fatalf("err = %v, want the unknown key on line 3", err)
	}
}

func TestBadValueRefusedWithLine(t *testing.T) {
	file := writeFile(t, "addr: 127.0.0.1:0\nmax-inflight: lots\n")
	fs, _ := newFlags()
	_, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", File: file, Environ: environ()})
	if err == nil || !strings.Contains(err.Error(), file+":2: max-inflight") {
		t.Fatalf("err = %v, want max-inflight on line 2", err)
	}
	fs, _ = newFlags()
	_, err = flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", Environ: environ("PARSEMCP_ADMISSION_WAIT=soon")})
	if err == nil || !strings.Contains(err.Error(), "PARSEMCP_ADMISSION_WAIT") {
		t.Fatalf("err = %v, want the variable named", err)
	}
}

func TestSkippedKeysAndMalformedFiles(t *testing.T) {
	for name, body := range map[string]string{
		"config key":  "config: other.yaml\n",
		"not mapping": "- addr\n",
		"duplicate":   "addr: a\naddr: b\n",
		"broken yaml": "addr: [\n",
	} {
		t.Run(name, func(t *testing.T) {
			fs, _ := newFlags()
			if _, err := flagconfig.Apply(fs, flagconfig.Options{File: writeFile(t, body), Skip: []string{"config"}, Environ: environ()}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	fs, _ := newFlags()
	if _, err := flagconfig.Apply(fs, flagconfig.Options{File: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

func TestPrintMasksSecretsAndRoundTrips(t *testing.T) {
	fs, _ := newFlags()
	src, err := flagconfig.Apply(fs, flagconfig.Options{Prefix: "PARSEMCP_", Skip: []string{"config"}, Environ: environ(
		"PARSEMCP_API_KEY=sekrit-key-123",
		"PARSEMCP_STORE=postgres://app:hunter2@db:5432/parse?sslmode=disable&password=hunter3",
	)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := flagconfig.Print(&b, fs, src, "config"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, secret := range []string{"sekrit", "hunter2", "hunter3"} {
		if strings.Contains(out, secret) {
			t.Errorf("printed configuration shows %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"api-key: '" + flagconfig.Mask + "' # env PARSEMCP_API_KEY", "postgres://app:", "@db:5432/parse", "sslmode=disable", "max-inflight: 4 # default"} {
		if !strings.Contains(out, want) {
			t.Errorf("printed configuration lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "config:") {
		t.Errorf("printed the skipped flag:\n%s", out)
	}
	// What it prints (without the secrets) is a config file it accepts.
	fs2, f2 := newFlags()
	if _, err := flagconfig.Apply(fs2, flagconfig.Options{File: writeFile(t, out), Skip: []string{"config"}, Environ: environ()}); err != nil {
		t.Fatalf("printed configuration refused: %v\n%s", err, out)
	}
	if f2.inflight != 4 || f2.addr != "127.0.0.1:8787" {
		t.Errorf("round trip: %+v", f2)
	}
}

// Redact hides the secret inside an address, and in text that quotes
// one (an error message about a malformed URL), keeping the rest readable.
func TestRedact(t *testing.T) {
	const s = "S3CRET"
	for in, want := range map[string]string{
		"postgres://u:" + s + "@db:5432/app":                      "postgres://u:" + flagconfig.Mask + "@db:5432/app",
		"postgres://u@db/app?sslmode=disable&password=" + s:       "postgres://u@db/app?password=" + flagconfig.Mask + "&sslmode=disable",
		"redis://:" + s + "@cache:6379/0":                         "redis://:" + flagconfig.Mask + "@cache:6379/0",
		"mqtt://agent:" + s + "@broker:1883":                      "mqtt://agent:" + flagconfig.Mask + "@broker:1883",
		"https://as.example/jwks?access_token=" + s:               "https://as.example/jwks?access_token=" + flagconfig.Mask,
		"host=db user=u password=" + s + " dbname=app":            "host=db user=u password=" + flagconfig.Mask + " dbname=app",
		"host=db password='a " + s + "' user=u":                   "host=db password=" + flagconfig.Mask + " user=u",
		`parse "redis://u:` + s + `@h:xx/0": invalid port`:        `parse "redis://u:` + flagconfig.Mask + `@h:xx/0": invalid port`,
		"broker \"mqtt://u:" + s + "@h:x\" and ?token=" + s + " ": "broker \"mqtt://u:" + flagconfig.Mask + "@h:x\" and ?token=" + flagconfig.Mask + " ",
		"sqlite:/var/lib/app.db":                                  "sqlite:/var/lib/app.db",
		"https://as.example/":                                     "https://as.example/",
		"postgres://u@db/app?sslmode=disable":                     "postgres://u@db/app?sslmode=disable",
	} {
		if got := flagconfig.Redact(in); got != want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
