package federation

import "testing"

// TestParsePresence reads presence topics back into entities: each
// topic names one entity, so what it reads must name the same topic
// again, and a level that is not a team, a type or an id is refused.
func TestParsePresence(t *testing.T) {
	tp := Topics{Platform: "p1"}
	base := "parsemcp/v1/mcp/p1/agents/"
	for _, c := range []struct {
		topic string
		want  Entity
		ok    bool
	}{
		{base + "~/device/d1", Entity{Type: "device", ID: "d1"}, true},
		{base + "acme/mcp/everything", Entity{Type: "mcp", ID: "everything", Team: "acme"}, true},
		// An empty team level is not "no team": the broker's ACL on
		// agents/~/… must not be sidestepped by agents//….
		{base + "/device/d1", Entity{}, false},
		{base + "~/device/", Entity{}, false},
		{base + "~//d1", Entity{}, false},
		{base + "~/device/d1/x", Entity{}, false},
		{base + "+/device/d1", Entity{}, false},
		{"parsemcp/v1/mcp/p2/agents/~/device/d1", Entity{}, false},
	} {
		e, ok := tp.ParsePresence(c.topic)
		if ok != c.ok || e != c.want {
			t.Errorf("ParsePresence(%q) = %+v, %v; want %+v, %v", c.topic, e, ok, c.want, c.ok)
			continue
		}
		if ok && tp.Presence(e) != c.topic {
			t.Errorf("ParsePresence(%q) read %+v, which names %q", c.topic, e, tp.Presence(e))
		}
	}
}
