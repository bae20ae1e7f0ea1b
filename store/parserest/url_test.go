package parserest_test

import (
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/store/parserest"
)

func TestParseURL(t *testing.T) {
	t.Setenv(parserest.EnvMasterKey, "mk-secret")
	t.Setenv(parserest.EnvRESTKey, "")
	t.Setenv(parserest.EnvAppID, "")
	cfg, err := parserest.ParseURL("parse+https://myapp@api.example.com/parse/")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerURL != "https://api.example.com/parse" || cfg.AppID != "myapp" || cfg.MasterKey != "mk-secret" {
		t.Fatalf("config: %+v", cfg)
	}
	if r := cfg.Redacted(); r != "parse+https://myapp@api.example.com/parse" || strings.Contains(r, "mk-secret") {
		t.Fatalf("Redacted = %q", r)
	}
	if cfg, err := parserest.ParseURL("parse+http://app@127.0.0.1:1337"); err != nil || cfg.ServerURL != "http://127.0.0.1:1337/parse" {
		t.Fatalf("default mount: %+v %v", cfg, err)
	}
	for _, bad := range []string{
		"parse+https://myapp:mk@api.example.com/parse", // a key in the URL
		"parse+https://api.example.com/parse",          // no app id
		"parse+https:///parse",                         // no host
		"https://myapp@api.example.com/parse",          // not a parse+ URL
	} {
		if _, err := parserest.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "mk") && strings.Contains(bad, ":mk@") && strings.Contains(err.Error(), ":mk@") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}
