package federation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// RemoteTool is one tool of the merged remote catalog.
type RemoteTool struct {
	// Name is the namespaced name clients see: "<type>-<id>__<tool>". It
	// always holds a hyphen, which no tool of the server's own may.
	Name   string
	Entity Entity
	// Tool is the tool as its agent describes it (Tool.Name is the
	// agent's own name).
	Tool Tool
}

// Tools returns the merged remote catalog, sorted by name.
func (p *Platform) Tools() []RemoteTool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RemoteTool(nil), p.catalog...)
}

// Lookup returns the remote tool clients know as name.
func (p *Platform) Lookup(name string) (RemoteTool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.byName[name]; ok {
		return *t, true
	}
	return RemoteTool{}, false
}

// Warnings describes the agents whose tools are absent (offline, or
// their tool list could not be fetched), the remote tools left out, and
// a lost broker connection; bounded for tools/list (boundWarnings).
func (p *Platform) Warnings() []string {
	var broker []string
	if why := p.conn.health(); why != "" {
		broker = append(broker, "the federation broker is unreachable ("+why+"): remote tools are unavailable until it reconnects")
	}
	p.mu.Lock()
	out := append([]string(nil), p.skipped...)
	for _, st := range p.agents {
		switch {
		case !st.online:
			out = append(out, fmt.Sprintf("agent %s is offline: its tools are absent", st.entity))
		case st.gaveUp:
			out = append(out, fmt.Sprintf("agent %s did not list its tools in %d attempts (%v): its tools are absent until it announces itself again", st.entity, st.failures, st.err))
		case st.err != nil:
			out = append(out, fmt.Sprintf("agent %s is unavailable (%v): its tools are absent", st.entity, st.err))
		case st.tools == nil:
			out = append(out, fmt.Sprintf("agent %s is connecting: its tools are not listed yet", st.entity))
		default:
			out = append(out, st.leftOut...)
		}
	}
	p.mu.Unlock()
	sort.Strings(out)
	return boundWarnings(append(broker, out...))
}

// The warnings of a tools/list: at most maxWarnings lines of at most
// maxWarningLine bytes, then one line counting the rest; at most
// maxWarningBytes in all.
const (
	maxWarnings     = 5
	maxWarningLine  = 300
	maxWarningBytes = 2048
)

// boundWarnings keeps the first lines of ws within the bounds above and
// counts the others in a last line.
func boundWarnings(ws []string) []string {
	var out []string
	size := 0
	for i, w := range ws {
		w = truncate(w, maxWarningLine)
		if len(out) == maxWarnings || size+len(w) > maxWarningBytes-100 {
			return append(out, fmt.Sprintf("and %d more (agents offline or unavailable, remote tools left out): the server's log names each", len(ws)-i))
		}
		out = append(out, w)
		size += len(w)
	}
	return out
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func annKey(e Entity, tool string) string { return e.String() + "\x00" + tool }

// rebuildLocked recomputes the merged catalog from the online agents.
// Two tools whose exposed names collide (after the characters outside
// [A-Za-z0-9_-] became '_', or across agents) are never both listed:
// the first by agent and then tool name keeps the name, the other is
// left out with a warning.
func (p *Platform) rebuildLocked() {
	taken := map[string]RemoteTool{}
	var all []RemoteTool
	var skipped []string
	keys := make([]string, 0, len(p.agents))
	for k := range p.agents {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st := p.agents[k]
		if !st.online || st.err != nil {
			continue
		}
		tools := slices.Clone(st.tools)
		sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
		for _, t := range tools {
			name := ExposedName(st.entity, t.Name)
			if first, dup := taken[name]; dup {
				skipped = append(skipped, fmt.Sprintf("tool %q of agent %s is left out: its name %s is taken by tool %q of agent %s", t.Name, st.entity, name, first.Tool.Name, first.Entity))
				continue
			}
			rt := RemoteTool{Name: name, Entity: st.entity, Tool: t}
			taken[name] = rt
			all = append(all, rt)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	p.byName = make(map[string]*RemoteTool, len(all))
	for i := range all {
		p.byName[all[i].Name] = &all[i]
	}
	p.catalog = all
	for _, w := range skipped {
		if !slices.Contains(p.skipped, w) {
			p.o.Logger.Warn("federation: remote tool left out: its name is taken", "detail", w)
		}
	}
	p.skipped = skipped
}

// ExposedName is the name clients see for tool of e:
// "<type>-<id>__<tool>", the tool name's characters outside
// [A-Za-z0-9_-] replaced by '_', at most 64 characters (a longer one is
// cut and ends in a hash). It always holds a hyphen, which the server's
// own tool names never do, so a remote tool cannot shadow a local one.
func ExposedName(e Entity, tool string) string {
	var b strings.Builder
	for _, r := range tool {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := e.Type + "-" + e.ID + "__" + b.String()
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(annKey(e, tool)))
		name = name[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// Annotations returns the annotations of the remote tool clients know as
// name, from the annotation cache (a miss fetches the agent's list
// again), with its agent. A tool without annotations yields nil: callers
// must count it as writing (Annotations.ReadOnly does).
func (p *Platform) Annotations(ctx context.Context, name string) (*Annotations, Entity, error) {
	rt, ok := p.Lookup(name)
	if !ok {
		return nil, Entity{}, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	if a, ok := p.ann.Get(annKey(rt.Entity, rt.Tool.Name)); ok {
		return a, rt.Entity, nil
	}
	tools, _, err := p.fetchTools(ctx, rt.Entity)
	if err != nil {
		return nil, rt.Entity, err
	}
	for _, t := range tools {
		p.ann.Add(annKey(rt.Entity, t.Name), t.Annotations)
		if t.Name == rt.Tool.Name {
			return t.Annotations, rt.Entity, nil
		}
	}
	return nil, rt.Entity, fmt.Errorf("%w: %s (the agent no longer offers it)", ErrUnknownTool, name)
}
