package resources_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/resources"
)

// FuzzParseURI: ParseURI never panics; it accepts exactly the URIs that
// URI builds from a valid class name and a known kind, and refuses
// everything else with ErrBadURI.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{
		// valid
		"parse://Ticket/schema", "parse://Ticket/count", "parse://Ticket/samples",
		"parse://_User/count", "parse://_Session/schema", "parse://A/count",
		// invalid
		"", "parse://", "parse:///count", "parse://Ticket", "parse://Ticket/", "parse://Ticket/bogus",
		"parse://Ticket/count/", "parse://Ticket/count/extra", "parse://../etc/count", "parse://Tick et/count",
		"parse://_Nope/count", "parse://1abc/count", "PARSE://Ticket/count", "http://Ticket/count",
		"parse://Ticket/count?x=1", "parse://Ticket/count#frag", "parse://Ticket%2Fcount/schema",
		"parse://Tïcket/count", "parse://Ticket/\x00count", "parse://\xff/count",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		class, kind, err := resources.ParseURI(uri)
		if err != nil {
			if !errors.Is(err, resources.ErrBadURI) {
				t.Fatalf("ParseURI(%q): error %v does not wrap ErrBadURI", uri, err)
			}
			if class != "" || kind != "" {
				t.Fatalf("ParseURI(%q): error with results %q %q", uri, class, kind)
			}
			return
		}
		if !parse.ValidClassName(class) {
			t.Fatalf("ParseURI(%q): accepted invalid class %q", uri, class)
		}
		if !slices.Contains(resources.Kinds, kind) {
			t.Fatalf("ParseURI(%q): accepted unknown kind %q", uri, kind)
		}
		if got := resources.URI(class, kind); got != uri {
			t.Fatalf("ParseURI(%q) = %q, %q, which rebuild to %q", uri, class, kind, got)
		}
	})
}
