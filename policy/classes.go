package policy

// Class metadata: hidden classes, field allowlists, field descriptions and
// enums, canonical filters, default ACLs and tenant scopes.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func (b *builder) class(name string, rc *rawClass) *agent.ClassMeta {
	p := pth{"classes", name}
	if !parse.ValidClassName(name) {
		b.errAt(p, 0, "not a valid class name")
		return nil
	}
	if rc == nil {
		rc = &rawClass{}
	}
	cm := &agent.ClassMeta{Description: strings.TrimSpace(rc.Description)}
	if h := &rc.Hidden; present(h) && !isNull(h) {
		hp := p.k("hidden")
		if h.Kind != yaml.ScalarNode {
			b.errAt(hp, h.Line, "want true, false, except_master or always")
		} else {
			switch v := h.Value; {
			case h.ShortTag() == "!!bool":
				var on bool
				_ = h.Decode(&on)
				switch {
				case on:
					cm.Hidden = agent.HiddenExceptMaster
				case slices.Contains(parse.DefaultHiddenClasses, name) || slices.Contains(agent.ExceptMasterClasses, name):
					cm.Hidden = agent.HiddenNever
					b.warnAt(hp, h.Line, "unhides %s, which parsemcp hides by default: agents reach it under its class-level permissions and ACLs (a master-key agent reads every row)", name)
				}
			case v == agent.HiddenExceptMaster || v == agent.HiddenAlways:
				cm.Hidden = v
			default:
				b.errAt(hp, h.Line, "want true, false, except_master or always, not %q", v)
			}
		}
	}
	cm.AgentFields = b.fieldList(p.k("agent_fields"), rc.AgentFields)
	cm.JoinFields = b.fieldList(p.k("join_fields"), rc.JoinFields)
	cm.LargeFields = b.fieldList(p.k("large_fields"), rc.LargeFields)
	if cm.AgentFields != nil && cm.JoinFields != nil {
		var extra []string
		for _, f := range cm.JoinFields {
			if !slices.Contains(cm.AgentFields, f) {
				extra = append(extra, strconv.Quote(f))
			}
		}
		if len(extra) > 0 {
			b.errAt(p.k("join_fields"), 0, "%s not in agent_fields (join_fields may only narrow agent_fields)", strings.Join(extra, ", "))
		}
	}
	if cm.AgentFields != nil {
		for _, f := range cm.LargeFields {
			if !slices.Contains(cm.AgentFields, f) && !parse.IsSystemField(f) {
				b.warnAt(p.k("large_fields"), 0, "%q is not in agent_fields, so agents never see it anyway", f)
			}
		}
	}
	if len(rc.Fields) > 0 {
		cm.Fields = map[string]*agent.FieldMeta{}
	}
	for _, fname := range slices.Sorted(maps.Keys(rc.Fields)) {
		fp := p.k("fields").k(fname)
		if !b.checkFieldName(fp, fname) {
			continue
		}
		if cm.AgentFields != nil && !slices.Contains(cm.AgentFields, fname) && !parse.IsSystemField(fname) {
			b.warnAt(fp, 0, "not in agent_fields, so agents never see this field")
		}
		rf := rc.Fields[fname]
		if rf == nil {
			rf = &rawField{}
		}
		fm := &agent.FieldMeta{Description: strings.TrimSpace(rf.Description)}
		seen := map[string]bool{}
		for i := range rf.Enum {
			ev, ok := b.enumValue(&rf.Enum[i], fp.k("enum").i(i))
			if !ok {
				continue
			}
			if seen[ev.Value] {
				b.errAt(fp.k("enum").i(i), rf.Enum[i].Line, "value %q listed twice", ev.Value)
				continue
			}
			seen[ev.Value] = true
			fm.Enum = append(fm.Enum, ev)
		}
		cm.Fields[fname] = fm
	}
	if f := &rc.CanonicalFilter; present(f) && !isNull(f) {
		cm.CanonicalFilter = b.where(f, p.k("canonical_filter"))
	}
	if rc.DefaultACL != nil {
		cm.DefaultACL = map[string]parse.Perm{}
		for _, entry := range slices.Sorted(maps.Keys(rc.DefaultACL)) {
			if err := agent.CheckACLTemplate(entry); err != nil {
				b.errAt(p.k("default_acl").k(entry), 0, "%v", err)
				continue
			}
			rp := rc.DefaultACL[entry]
			cm.DefaultACL[entry] = parse.Perm{Read: rp.Read, Write: rp.Write}
		}
	}
	if rt := rc.Tenant; rt != nil {
		tp := p.k("tenant")
		switch {
		case rt.Field == "":
			b.errAt(tp, 0, "field is required (the String or Pointer field holding the tenant)")
		case b.checkFieldName(tp.k("field"), rt.Field):
			cm.Tenant = &agent.TenantScope{Field: rt.Field, Bypass: b.tenantBypass(&rt.Bypass, tp.k("bypass"))}
		}
	}
	cm.AllowFullScan = rc.AllowFullScan
	return cm
}

// checkFieldName checks a field named by the file: a legal name (or a
// field every class has) and not an internal column.
func (b *builder) checkFieldName(p pth, f string) bool {
	switch {
	case internalField(f):
		b.errAt(p, 0, "%q is an internal field; the policy may not name it", f)
		return false
	case !parse.ValidFieldName(f) && !parse.IsSystemField(f):
		b.errAt(p, 0, "%q is not a valid field name", f)
		return false
	}
	return true
}

// fieldList checks a list of field names; nil stays nil (not given).
func (b *builder) fieldList(p pth, names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for i, f := range names {
		if !b.checkFieldName(p.i(i), f) {
			continue
		}
		if slices.Contains(out, f) {
			b.errAt(p.i(i), 0, "%q listed twice", f)
			continue
		}
		out = append(out, f)
	}
	return out
}

func (b *builder) enumValue(n *yaml.Node, p pth) (agent.EnumValue, bool) {
	n = resolveAlias(n)
	switch {
	case n.Kind == yaml.ScalarNode && !isNull(n):
		return agent.EnumValue{Value: n.Value}, true
	case n.Kind == yaml.MappingNode:
		var ev agent.EnumValue
		hasValue := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolveAlias(n.Content[i+1])
			if k.Value != "value" && k.Value != "description" {
				b.errAt(p, k.Line, "unknown key %q in an enum value (known keys: description, value)", k.Value)
				return ev, false
			}
			if v.Kind != yaml.ScalarNode || isNull(v) {
				b.errAt(p.k(k.Value), v.Line, "want a string")
				return ev, false
			}
			if k.Value == "value" {
				ev.Value, hasValue = v.Value, true
			} else {
				ev.Description = strings.TrimSpace(v.Value)
			}
		}
		if !hasValue {
			b.errAt(p, n.Line, "an enum entry needs a value")
			return ev, false
		}
		return ev, true
	}
	b.errAt(p, n.Line, "want a value, or {value: ..., description: ...}")
	return agent.EnumValue{}, false
}
