package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// A session token kept in an identity never shows in fmt, JSON or slog.
func TestSecretNeverShows(t *testing.T) {
	const tok = "r:0123456789abcdef-SECRET"
	id := agent.Identity{Mode: agent.AuthUser, UserID: "u1", Session: agent.NewSecret(tok)}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("identity", "id", id, "session", id.Session)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("identity", "id", id, "session", id.Session)
	js, _ := json.Marshal(id)
	for _, out := range []string{fmt.Sprintf("%v %+v %#v %s", id, id, id, id.Session), string(js), logs.String()} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("the token shows: %s", out)
		}
	}
	if id.Session.Reveal() != tok || !id.Session.Equal(agent.NewSecret(tok)) {
		t.Error("Reveal/Equal lost the token")
	}
}
