package federation

import (
	"fmt"
	"sort"
	"strings"
)

// MosquittoACL returns a Mosquitto ACL file that confines the platform's
// broker user and each agent's user (agents maps a user name to its
// entity) to their own federation topics: the platform may publish
// requests, read responses and read presence; an agent may read its own
// requests, publish its own responses and publish its own presence (whose
// topic carries its team, so an agent cannot claim another team).
func MosquittoACL(t Topics, platformUser string, agents map[string]Entity) string {
	base := strings.TrimSuffix(t.Request("x", "x", Entity{Type: "x", ID: "x"}), "/x/x/x/x/req")
	var b strings.Builder
	fmt.Fprintf(&b, "# parsemcp federation: platform %s\nuser %s\n", t.Platform, platformUser)
	fmt.Fprintf(&b, "topic write %s/+/+/+/+/req\ntopic read %s/+/+/+/+/res\ntopic read %s/agents/#\n", base, base, base)
	users := make([]string, 0, len(agents))
	for u := range agents {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		e := agents[u]
		fmt.Fprintf(&b, "\nuser %s\n", u)
		fmt.Fprintf(&b, "topic read %s\n", t.AgentRequests(e))
		fmt.Fprintf(&b, "topic write %s/+/+/%s/%s/res\n", base, e.Type, e.ID)
		fmt.Fprintf(&b, "topic write %s\n", t.Presence(e))
	}
	return b.String()
}
