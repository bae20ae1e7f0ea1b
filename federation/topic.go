package federation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/internal/shape"
)

// DefaultPrefix is the first level of every federation topic.
const DefaultPrefix = "parsemcp"

// Entity is a remote agent: a type (device, service, mcp …) and an id,
// which with the platform id name its topics, and the team it belongs
// to ("" for none), which its presence topic carries and the broker's ACL
// binds.
type Entity struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Team string `json:"team,omitempty"`
}

// String is "type/id".
func (e Entity) String() string { return e.Type + "/" + e.ID }

// idChars is [A-Za-z0-9_-], the characters of ids and literal levels.
var idChars = shape.Word.Or(shape.Chars("-"))

// validLiteral reports whether s may stand as a topic level as it is:
// what ^[A-Za-z0-9_-]{1,64}$ matches.
func validLiteral(s string) bool { return shape.Run(s, idChars, 1, 64) }

// Validate checks that the entity's parts can stand in a topic as they
// are: a type of letters, digits and underscores, an id and a team that
// may also hold hyphens.
func (e Entity) Validate() error {
	if !shape.Run(e.Type, shape.Word, 1, 32) {
		return fmt.Errorf("entity type %q: use 1-32 letters, digits or underscores", e.Type)
	}
	if !shape.Run(e.ID, idChars, 1, 64) {
		return fmt.Errorf("entity id %q: use 1-64 letters, digits, underscores or hyphens", e.ID)
	}
	if e.Team != "" && !validLiteral(e.Team) {
		return fmt.Errorf("team %q: use 1-64 letters, digits, underscores or hyphens", e.Team)
	}
	return nil
}

// ParseEntity reads "type/id".
func ParseEntity(s string) (Entity, error) {
	t, id, ok := strings.Cut(s, "/")
	if !ok {
		return Entity{}, fmt.Errorf("entity %q: want TYPE/ID", s)
	}
	e := Entity{Type: t, ID: id}
	return e, e.Validate()
}

// Segment makes s safe as one topic level: letters, digits, underscores
// and hyphens pass as they are (up to 64); anything else (a '/', '+', '#',
// an empty or long string) becomes "~" and a hash, which no literal
// segment can equal.
func Segment(s string) string {
	if validLiteral(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "~" + hex.EncodeToString(sum[:12])
}

// noTeam is the team level of an entity without a team.
const noTeam = "~"

// Topics names the federation topics of one platform:
//
//	<prefix>/v1/mcp/<platform>/<user>/<session>/<entityType>/<entityId>/req
//	<prefix>/v1/mcp/<platform>/<user>/<session>/<entityType>/<entityId>/res
//	<prefix>/v1/mcp/<platform>/agents/<team>/<entityType>/<entityId>   (presence, retained)
//
// The user and session levels pass through Segment. A user or session
// named "agents" cannot collide with the presence topics, which have one
// level fewer.
type Topics struct {
	Prefix   string
	Platform string
}

func (t Topics) base() string {
	p := t.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	return p + "/v1/mcp/" + Segment(t.Platform)
}

// Request is the topic a call for (user, session) to e is published on.
func (t Topics) Request(user, session string, e Entity) string {
	return t.base() + "/" + Segment(user) + "/" + Segment(session) + "/" + e.Type + "/" + e.ID + "/req"
}

// Response is the topic the answer to a Request is published on.
func (t Topics) Response(user, session string, e Entity) string {
	return t.base() + "/" + Segment(user) + "/" + Segment(session) + "/" + e.Type + "/" + e.ID + "/res"
}

// AgentRequests is the filter an agent subscribes to: every user's and
// session's requests to e.
func (t Topics) AgentRequests(e Entity) string {
	return t.base() + "/+/+/" + e.Type + "/" + e.ID + "/req"
}

// Presence is e's retained presence topic.
func (t Topics) Presence(e Entity) string {
	team := e.Team
	if team == "" {
		team = noTeam
	}
	return t.base() + "/agents/" + team + "/" + e.Type + "/" + e.ID
}

// PresenceFilter matches every agent's presence topic.
func (t Topics) PresenceFilter() string { return t.base() + "/agents/+/+/+" }

// ParsePresence reads the entity from a presence topic.
func (t Topics) ParsePresence(topic string) (Entity, bool) {
	rest, ok := strings.CutPrefix(topic, t.base()+"/agents/")
	if !ok {
		return Entity{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return Entity{}, false
	}
	// Only "~" names no team: an empty level is not a team, and reading
	// it as none would let a publisher the broker's ACL keeps off
	// agents/~/… pass for a teamless agent.
	e := Entity{Team: parts[0], Type: parts[1], ID: parts[2]}
	switch e.Team {
	case noTeam:
		e.Team = ""
	case "":
		return Entity{}, false
	}
	if e.Validate() != nil {
		return Entity{}, false
	}
	return e, true
}

// parseRequest reads (user, session) from a request topic of e; ok is
// false when the topic is not one.
func (t Topics) parseRequest(topic string, e Entity) (user, session string, ok bool) {
	rest, ok := strings.CutPrefix(topic, t.base()+"/")
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, "/"+e.Type+"/"+e.ID+"/req")
	if !ok {
		return "", "", false
	}
	user, session, ok = strings.Cut(rest, "/")
	if !ok || user == "" || session == "" || strings.Contains(session, "/") {
		return "", "", false
	}
	return user, session, true
}
