package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// The file as the YAML decoder sees it. Polymorphic values (identity,
// filters, schemas, templates) stay yaml.Node and are read by the builder,
// which knows their path and line.
type rawPolicy struct {
	Settings rawSettings            `yaml:"settings"`
	Agents   map[string]*rawProfile `yaml:"agents"`
	Classes  map[string]*rawClass   `yaml:"classes"`
	Methods  map[string]*rawMethod  `yaml:"methods"`
	OAuth    *rawOAuth              `yaml:"oauth"`
}

type rawSettings struct {
	StrictToolFilter  bool   `yaml:"strict_tool_filter"`
	StrictClassFilter bool   `yaml:"strict_class_filter"`
	RecursionDepth    *int   `yaml:"recursion_depth"`
	DefaultAgent      string `yaml:"default_agent"`
}

type rawProfile struct {
	Permission string               `yaml:"permission"`
	Identity   yaml.Node            `yaml:"identity"`
	Keys       []*rawKey            `yaml:"keys"`
	Tenant     string               `yaml:"tenant"`
	Tools      yaml.Node            `yaml:"tools"`
	Classes    yaml.Node            `yaml:"classes"`
	Methods    yaml.Node            `yaml:"methods"`
	Filters    map[string]yaml.Node `yaml:"filters"`
	Parent     string               `yaml:"parent"`
	Depth      *int                 `yaml:"depth"`
}

type rawKey struct {
	Env    string `yaml:"env"`
	SHA256 string `yaml:"sha256"`
	Key    string `yaml:"key"`
}

type rawClass struct {
	Description     string               `yaml:"description"`
	Hidden          yaml.Node            `yaml:"hidden"`
	AgentFields     []string             `yaml:"agent_fields"`
	JoinFields      []string             `yaml:"join_fields"`
	LargeFields     []string             `yaml:"large_fields"`
	Fields          map[string]*rawField `yaml:"fields"`
	CanonicalFilter yaml.Node            `yaml:"canonical_filter"`
	Tenant          *rawTenant           `yaml:"tenant"`
	DefaultACL      map[string]rawPerm   `yaml:"default_acl"`
}

type rawPerm struct {
	Read  bool `yaml:"read"`
	Write bool `yaml:"write"`
}

type rawField struct {
	Description string      `yaml:"description"`
	Enum        []yaml.Node `yaml:"enum"`
}

type rawTenant struct {
	Field  string `yaml:"field"`
	Bypass string `yaml:"bypass"`
}

type rawMethod struct {
	Description    string    `yaml:"description"`
	Permission     string    `yaml:"permission"`
	Instance       *bool     `yaml:"instance"`
	Destructive    bool      `yaml:"destructive"`
	SupportsDryRun bool      `yaml:"supports_dry_run"`
	Parameters     yaml.Node `yaml:"parameters"`
	Update         yaml.Node `yaml:"update"`
	Create         yaml.Node `yaml:"create"`
	Go             string    `yaml:"go"`
}

// rawTypes names the raw types for the decoder's unknown-key errors.
var rawTypes = map[string]struct {
	what string
	t    reflect.Type
}{
	"policy.rawPolicy":   {"the policy file", reflect.TypeFor[rawPolicy]()},
	"policy.rawSettings": {"settings", reflect.TypeFor[rawSettings]()},
	"policy.rawProfile":  {"an agent profile", reflect.TypeFor[rawProfile]()},
	"policy.rawKey":      {"a key", reflect.TypeFor[rawKey]()},
	"policy.rawClass":    {"a class", reflect.TypeFor[rawClass]()},
	"policy.rawField":    {"a field", reflect.TypeFor[rawField]()},
	"policy.rawTenant":   {"a tenant scope", reflect.TypeFor[rawTenant]()},
	"policy.rawMethod":   {"a method", reflect.TypeFor[rawMethod]()},
	"policy.rawOAuth":    {"the oauth section", reflect.TypeFor[rawOAuth]()},
}

// rawShapes describe the raw types in the decoder's type errors: alone,
// and in a list or mapping.
var rawShapes = map[string][2]string{
	"rawPolicy":   {"a mapping (settings, agents, classes, methods)", "policies"},
	"rawSettings": {"settings (a mapping)", "settings"},
	"rawProfile":  {"an agent profile (a mapping)", "agent profiles"},
	"rawKey":      {"a key ({env: VAR}, {sha256: <hex>} or {key: <token>})", "keys ({env: VAR}, {sha256: <hex>} or {key: <token>})"},
	"rawClass":    {"class metadata (a mapping)", "class metadata"},
	"rawField":    {"field metadata ({description: ..., enum: [...]})", "field metadata ({description: ..., enum: [...]})"},
	"rawTenant":   {"a tenant scope ({field: ..., bypass: admin})", "tenant scopes"},
	"rawMethod":   {"a method (a mapping)", "methods"},
	"rawOAuth":    {"the oauth section (a mapping)", "oauth"},
}

var unmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")

// friendlyTypes rewrites the decoder's "cannot unmarshal !!str `x` into
// policy.rawKey" as "want a key (...), not the string `x`".
func friendlyTypes(msg string) string {
	sm := unmarshalRE.FindStringSubmatch(msg)
	if sm == nil {
		return msg
	}
	kinds := map[string]string{"str": "a string", "seq": "a list", "map": "a mapping", "int": "an integer", "bool": "a boolean", "float": "a number", "null": "null"}
	got := kinds[sm[1]]
	if got == "" {
		got = sm[1]
	}
	if sm[2] != "" {
		got += " `" + sm[2] + "`"
	}
	return "want " + goTypeName(sm[3]) + ", not " + got
}

func goTypeName(t string) string { return typeName(t, 0) }

// typeName names Go type t; n is 0 for one value, 1 for many.
func typeName(t string, n int) string {
	switch {
	case strings.HasPrefix(t, "map[string]"):
		return "a mapping of names to " + typeName(strings.TrimPrefix(t, "map[string]"), 1)
	case strings.HasPrefix(t, "[]"):
		return "a list of " + typeName(strings.TrimPrefix(t, "[]"), 1)
	case strings.HasPrefix(t, "*"):
		return typeName(t[1:], n)
	case strings.HasPrefix(t, "policy."):
		if s, ok := rawShapes[strings.TrimPrefix(t, "policy.")]; ok {
			return s[n]
		}
	case t == "string":
		return [2]string{"a string", "strings"}[n]
	case t == "int":
		return [2]string{"an integer", "integers"}[n]
	case t == "bool":
		return "true or false"
	}
	return t
}

func yamlKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

var (
	profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	methodNameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
	roleNameRE    = regexp.MustCompile(`^[A-Za-z0-9_\- ]{1,128}$`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	hexDigestRE   = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// forbiddenOps are operators that run code on the database; no filter in
// the file may use them, at any depth.
var forbiddenOps = map[string]bool{"$where": true, "$function": true, "$accumulator": true}

// internalField reports whether name (or its head, for a dotted path) is a
// storage column or credential that no filter, allowlist or template may
// name: parse.IsInternalField, the one rule.
func internalField(name string) bool {
	head, _, _ := strings.Cut(name, ".")
	return parse.IsInternalField(head)
}

type builder struct {
	opts        Options
	src         *source
	errs        []*Error
	warns       []*Error
	conv        valueConv
	strictTools bool
}

func (b *builder) errAt(p pth, line int, format string, args ...any) {
	if line == 0 {
		line = b.src.line(p)
	}
	b.errs = append(b.errs, &Error{File: b.src.name, Line: line, Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

func (b *builder) warnAt(p pth, line int, format string, args ...any) {
	if line == 0 {
		line = b.src.line(p)
	}
	b.warns = append(b.warns, &Error{File: b.src.name, Line: line, Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

func (b *builder) add(e *Error) {
	e.File = b.src.name
	b.errs = append(b.errs, e)
}

func (b *builder) err() error { return joinErrors(b.errs) }

func (b *builder) warnings() []string {
	sort.SliceStable(b.warns, func(i, j int) bool { return b.warns[i].Line < b.warns[j].Line })
	out := make([]string, len(b.warns))
	for i, w := range b.warns {
		out[i] = w.Error()
	}
	return out
}

func (b *builder) yamlError(err error) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, m := range te.Errors {
			b.yamlMsg(m)
		}
		return
	}
	b.yamlMsg(err.Error())
}

func (b *builder) yamlMsg(m string) {
	if sm := unknownFieldRE.FindStringSubmatch(m); sm != nil {
		line, _ := strconv.Atoi(sm[1])
		p := b.src.pathAt(line, sm[2])
		if len(p) > 0 {
			p = p[:len(p)-1]
		}
		what, known := "this mapping", []string(nil)
		if rt, ok := rawTypes[sm[3]]; ok {
			what, known = rt.what, yamlKeys(rt.t)
		}
		b.errAt(p, line, "unknown key %q in %s (known keys: %s)", sm[2], what, strings.Join(known, ", "))
		return
	}
	if sm := lineMsgRE.FindStringSubmatch(m); sm != nil {
		line, _ := strconv.Atoi(sm[1])
		b.errAt(b.src.pathAt(line, ""), line, "%s", friendlyTypes(sm[2]))
		return
	}
	b.errAt(nil, 0, "%s", strings.TrimPrefix(m, "yaml: "))
}

// build runs every static check and returns the policy (meaningful only
// when no error was recorded).
func (b *builder) build(data []byte) *Policy {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if err != nil && err != io.EOF {
		b.yamlError(err)
		return nil
	}
	if err == nil {
		var extra yaml.Node
		if err := dec.Decode(&extra); err != io.EOF {
			b.errAt(nil, extra.Line, "a policy file holds one YAML document")
			return nil
		}
		if len(doc.Content) == 1 {
			top := doc.Content[0]
			switch {
			case top.Kind == yaml.MappingNode:
				b.src.root = top
			case isNull(top):
			default:
				b.errAt(nil, top.Line, "the top level must be a mapping (settings, agents, classes, methods)")
				return nil
			}
		}
	}
	var raw rawPolicy
	if b.src.root != nil {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&raw); err != nil && err != io.EOF {
			b.yamlError(err)
			return nil
		}
	}

	pol := &Policy{
		Agents:  map[string]*Profile{},
		Catalog: &agent.Catalog{Classes: map[string]*agent.ClassMeta{}, Methods: map[string]*agent.Method{}},
		src:     b.src,
	}
	b.settings(pol, &raw.Settings)
	for _, name := range slices.Sorted(maps.Keys(raw.Classes)) {
		if cm := b.class(name, raw.Classes[name]); cm != nil {
			pol.Catalog.Classes[name] = cm
		}
	}
	for _, name := range slices.Sorted(maps.Keys(raw.Methods)) {
		if m := b.method(name, raw.Methods[name]); m != nil {
			pol.Catalog.Methods[name] = m
		}
	}
	for _, name := range slices.Sorted(maps.Keys(raw.Agents)) {
		if prof := b.profile(pol, name, raw.Agents[name]); prof != nil {
			pol.Agents[name] = prof
		}
	}
	b.parents(pol)
	b.keyClashes(pol)
	b.oauth(pol, raw.OAuth)
	if d := pol.DefaultAgent; d != "" {
		if _, declared := raw.Agents[d]; !declared {
			b.errAt(pth{"settings", "default_agent"}, 0, "no agent profile %q", d)
		}
	}
	pol.Warnings = b.warnings()
	return pol
}

func (b *builder) settings(pol *Policy, rs *rawSettings) {
	pol.StrictToolFilter = rs.StrictToolFilter
	b.strictTools = rs.StrictToolFilter
	pol.StrictClassFilter = rs.StrictClassFilter
	pol.DefaultAgent = rs.DefaultAgent
	pol.RecursionDepth = agent.DefaultRecursionDepth
	if rs.RecursionDepth != nil {
		if d := *rs.RecursionDepth; d < 0 || d > 64 {
			b.errAt(pth{"settings", "recursion_depth"}, 0, "must be between 0 and 64, not %d", d)
		} else {
			pol.RecursionDepth = d
		}
	}
}

// --- classes ---

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
			ts := &agent.TenantScope{Field: rt.Field}
			switch rt.Bypass {
			case "":
			case "admin":
				ts.BypassAdmin = true
			default:
				b.errAt(tp.k("bypass"), 0, "want admin (or leave it out), not %q", rt.Bypass)
			}
			cm.Tenant = ts
		}
	}
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

// where converts a where-constraint and checks it for forbidden
// operators and internal fields.
func (b *builder) where(n *yaml.Node, p pth) map[string]any {
	v, e := b.conv.convert(n, p, 0)
	if e != nil {
		b.add(e)
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		b.errAt(p, n.Line, "want a where-constraint mapping, e.g. {archived: {$ne: true}}")
		return nil
	}
	if msg, at := forbiddenIn(m, p); msg != "" {
		b.errAt(at, 0, "%s", msg)
		return nil
	}
	if msg, at := internalIn(m, p); msg != "" {
		b.errAt(at, 0, "%s", msg)
		return nil
	}
	return m
}

// forbiddenIn finds a code-running operator anywhere in v.
func forbiddenIn(v any, p pth) (string, pth) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if forbiddenOps[k] {
				return fmt.Sprintf("%s runs code on the database and is not allowed in a policy filter", k), p.k(k)
			}
			if msg, at := forbiddenIn(x[k], p.k(k)); msg != "" {
				return msg, at
			}
		}
	case []any:
		for i, e := range x {
			if msg, at := forbiddenIn(e, p.i(i)); msg != "" {
				return msg, at
			}
		}
	}
	return "", nil
}

// internalIn finds an internal field named as a constraint key (also
// inside $or/$and/$nor, $inQuery/$select sub-queries and $relatedTo/$select
// keys).
func internalIn(m map[string]any, p pth) (string, pth) {
	bad := func(f string, at pth) (string, pth) {
		return fmt.Sprintf("%q is an internal field; a policy filter may not name it", f), at
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "$or", "$and", "$nor":
			arr, _ := v.([]any)
			for i, e := range arr {
				if sub, ok := e.(map[string]any); ok {
					if msg, at := internalIn(sub, p.k(k).i(i)); msg != "" {
						return msg, at
					}
				}
			}
			continue
		case "$relatedTo":
			if rm, ok := v.(map[string]any); ok {
				if key, ok := rm["key"].(string); ok && internalField(key) {
					return bad(key, p.k(k).k("key"))
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		if internalField(k) {
			return bad(k, p.k(k))
		}
		ops, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			om, ok := ops[op].(map[string]any)
			if !ok {
				continue
			}
			switch op {
			case "$inQuery", "$notInQuery":
				if w, ok := om["where"].(map[string]any); ok {
					if msg, at := internalIn(w, p.k(k).k(op).k("where")); msg != "" {
						return msg, at
					}
				}
			case "$select", "$dontSelect":
				if key, ok := om["key"].(string); ok && internalField(key) {
					return bad(key, p.k(k).k(op).k("key"))
				}
				if q, ok := om["query"].(map[string]any); ok {
					if w, ok := q["where"].(map[string]any); ok {
						if msg, at := internalIn(w, p.k(k).k(op).k("query").k("where")); msg != "" {
							return msg, at
						}
					}
				}
			}
		}
	}
	return "", nil
}

// --- methods ---

func (b *builder) method(key string, rm *rawMethod) *agent.Method {
	p := pth{"methods", key}
	class, name, ok := strings.Cut(key, ".")
	if !ok || !parse.ValidClassName(class) || !methodNameRE.MatchString(name) {
		b.errAt(p, 0, `method names are "Class.name": a class name, a dot, then a letter followed by letters, digits or underscores`)
		return nil
	}
	if rm == nil {
		b.errAt(p, 0, "empty method: declare one of update, create or go")
		return nil
	}
	m := &agent.Method{
		Class: class, Name: name, Description: strings.TrimSpace(rm.Description),
		Destructive: rm.Destructive, SupportsDryRun: rm.SupportsDryRun,
	}
	var kinds []string
	if present(&rm.Update) {
		kinds = append(kinds, agent.MethodUpdate)
	}
	if present(&rm.Create) {
		kinds = append(kinds, agent.MethodCreate)
	}
	if rm.Go != "" {
		kinds = append(kinds, agent.MethodGo)
	}
	if len(kinds) != 1 {
		found := "none"
		if len(kinds) > 0 {
			found = strings.Join(kinds, " and ")
		}
		b.errAt(p, 0, "declare exactly one of update, create or go (found %s)", found)
		return nil
	}
	m.Kind = kinds[0]
	okAll := true

	// Permission: a method that writes is at least write.
	m.Permission = agent.Readonly
	if m.Kind != agent.MethodGo {
		m.Permission = agent.Write
	}
	if rm.Permission != "" {
		perm, err := agent.ParsePermission(rm.Permission)
		switch {
		case err != nil:
			b.errAt(p.k("permission"), 0, "%v", err)
			okAll = false
		case perm == agent.Readonly && m.Kind != agent.MethodGo:
			b.errAt(p.k("permission"), 0, "an %s method writes, so it needs permission write or admin", m.Kind)
			okAll = false
		default:
			m.Permission = perm
		}
	}

	switch m.Kind {
	case agent.MethodUpdate:
		m.Instance = true
		if rm.Instance != nil && !*rm.Instance {
			b.errAt(p.k("instance"), 0, "an update method changes one object, so it is an instance method (leave instance out or set it true)")
			okAll = false
		}
	case agent.MethodCreate:
		if rm.Instance != nil && *rm.Instance {
			b.errAt(p.k("instance"), 0, "a create method makes a new object, so it cannot be an instance method")
			okAll = false
		}
	default:
		m.Instance = rm.Instance != nil && *rm.Instance
	}

	if !b.parameters(m, &rm.Parameters, p.k("parameters")) {
		okAll = false
	}

	switch m.Kind {
	case agent.MethodUpdate, agent.MethodCreate:
		n := &rm.Update
		if m.Kind == agent.MethodCreate {
			n = &rm.Create
		}
		set, ok := b.template(m, n, p.k(m.Kind))
		if !ok {
			okAll = false
		}
		m.Set = set
	case agent.MethodGo:
		fn, ok := b.opts.Funcs[rm.Go]
		if !ok || fn == nil {
			known := slices.Sorted(maps.Keys(b.opts.Funcs))
			hint := "no functions are registered"
			if len(known) > 0 {
				hint = "registered: " + strings.Join(known, ", ")
			}
			b.errAt(p.k("go"), 0, "no Go function %q (%s)", rm.Go, hint)
			okAll = false
		}
		m.Func, m.FuncName = fn, rm.Go
	}
	if m.Description == "" {
		b.warnAt(p, 0, "no description: agents see the method without an explanation")
	}
	if !okAll {
		return nil
	}
	return m
}

// noArgs is the parameter schema of a method that declares none.
func noArgs() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

func (b *builder) parameters(m *agent.Method, n *yaml.Node, p pth) bool {
	var s *jsonschema.Schema
	if !present(n) || isNull(n) {
		s = noArgs()
	} else {
		v, e := b.conv.convert(n, p, 0)
		if e != nil {
			b.add(e)
			return false
		}
		if _, ok := v.(map[string]any); !ok {
			b.errAt(p, n.Line, "want a JSON schema of type object")
			return false
		}
		raw, err := json.Marshal(v)
		if err == nil {
			s = new(jsonschema.Schema)
			err = json.Unmarshal(raw, s)
		}
		if err != nil {
			b.errAt(p, n.Line, "not a JSON schema: %v", err)
			return false
		}
		if s.Type != "object" {
			b.errAt(p, n.Line, "the parameters schema must have type: object")
			return false
		}
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		b.errAt(p, n.Line, "invalid JSON schema: %v", err)
		return false
	}
	m.Parameters, m.Resolved = s, resolved
	return true
}

// template reads the field template of an update or create method.
func (b *builder) template(m *agent.Method, n *yaml.Node, p pth) (map[string]any, bool) {
	v, e := b.conv.convert(n, p, 0)
	if e != nil {
		b.add(e)
		return nil, false
	}
	set, isMap := v.(map[string]any)
	if !isMap {
		b.errAt(p, n.Line, "want a mapping of field names to values")
		return nil, false
	}
	if m.Kind == agent.MethodUpdate && len(set) == 0 {
		b.errAt(p, n.Line, "an update method must set at least one field")
		return nil, false
	}
	ok := true
	for _, f := range slices.Sorted(maps.Keys(set)) {
		fp := p.k(f)
		switch f {
		case parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt:
			b.errAt(fp, 0, "%s is set by the store, not by a method", f)
			ok = false
			continue
		case parse.FieldACL:
		default:
			if !b.checkFieldName(fp, f) {
				ok = false
				continue
			}
		}
		if !b.argRefs(m, set[f], fp, 0) {
			ok = false
		}
	}
	return set, ok
}

// argRefs checks every {"$arg": name} in v: well formed, and naming a
// declared parameter.
func (b *builder) argRefs(m *agent.Method, v any, p pth, depth int) bool {
	switch x := v.(type) {
	case map[string]any:
		if ref, has := x["$arg"]; has {
			name, isStr := ref.(string)
			if len(x) != 1 || !isStr || name == "" {
				b.errAt(p, 0, `an argument reference is exactly {$arg: <parameter name>}`)
				return false
			}
			if m.Parameters == nil || m.Parameters.Properties[name] == nil {
				b.errAt(p.k("$arg"), 0, "%q is not a property of the method's parameters", name)
				return false
			}
			return true
		}
		ok := true
		for _, k := range slices.Sorted(maps.Keys(x)) {
			ok = b.argRefs(m, x[k], p.k(k), depth+1) && ok
		}
		return ok
	case []any:
		ok := true
		for i, e := range x {
			ok = b.argRefs(m, e, p.i(i), depth+1) && ok
		}
		return ok
	}
	return true
}

// --- agents ---

func (b *builder) profile(pol *Policy, name string, rp *rawProfile) *Profile {
	p := pth{"agents", name}
	if !profileNameRE.MatchString(name) {
		b.errAt(p, 0, "profile names are a letter or digit followed by letters, digits, '.', '_' or '-' (at most 64)")
		return nil
	}
	if rp == nil {
		rp = &rawProfile{}
	}
	prof := &Profile{Name: name, Parent: rp.Parent, Tenant: rp.Tenant}
	if rp.Permission != "" {
		perm, err := agent.ParsePermission(rp.Permission)
		if err != nil {
			b.errAt(p.k("permission"), 0, "%v", err)
		}
		prof.Permission = perm
	}
	prof.Identity = b.identity(&rp.Identity, p.k("identity"))
	if prof.Identity.Kind == IdentityInherit && rp.Parent == "" && !(present(&rp.Identity) && !isNull(&rp.Identity)) {
		b.errAt(p, 0, "identity is required: master, anonymous, session, {user: <objectId or username>} or {roles: [<role names>]}")
	}
	if len(prof.Tenant) > 256 || strings.ContainsFunc(prof.Tenant, func(r rune) bool { return r < ' ' }) {
		b.errAt(p.k("tenant"), 0, "a tenant is at most 256 printable characters")
	}
	for i, rk := range rp.Keys {
		if k, ok := b.key(rk, p.k("keys").i(i)); ok {
			prof.Keys = append(prof.Keys, k)
		}
	}
	prof.Tools = b.nameFilter(&rp.Tools, p.k("tools"), b.checkTool)
	prof.Classes = b.nameFilter(&rp.Classes, p.k("classes"), func(at pth, n string) {
		if !parse.ValidClassName(n) {
			b.errAt(at, 0, "%q is not a valid class name", n)
		}
	})
	prof.Methods = b.nameFilter(&rp.Methods, p.k("methods"), func(at pth, n string) {
		class, meth, qualified := strings.Cut(n, ".")
		switch {
		case qualified && (!parse.ValidClassName(class) || !methodNameRE.MatchString(meth)),
			!qualified && !methodNameRE.MatchString(n):
			b.errAt(at, 0, `%q is not a method name (use "name" for any class or "Class.name")`, n)
		case !declaredMethod(pol.Catalog, n):
			b.warnAt(at, 0, "no declared method matches %q", n)
		}
	})
	if len(rp.Filters) > 0 {
		prof.Filters = agent.ClassFilters{}
	}
	for _, class := range slices.Sorted(maps.Keys(rp.Filters)) {
		fp := p.k("filters").k(class)
		if class != agent.DefaultFilterKey && !parse.ValidClassName(class) {
			b.errAt(fp, 0, "not a valid class name (or %s)", agent.DefaultFilterKey)
			continue
		}
		n := rp.Filters[class]
		if isNull(&n) {
			continue
		}
		if w := b.where(&n, fp); w != nil {
			prof.Filters[class] = w
		}
	}
	if rp.Depth != nil {
		switch d := *rp.Depth; {
		case d < 1:
			b.errAt(p.k("depth"), 0, "must be at least 1 (settings.recursion_depth: 0 allows no sub-agents at all)")
		case d > pol.RecursionDepth:
			b.errAt(p.k("depth"), 0, "%d exceeds settings.recursion_depth (%d); depth may only tighten it", d, pol.RecursionDepth)
		default:
			prof.Depth = d
		}
	}
	return prof
}

func declaredMethod(c *agent.Catalog, entry string) bool {
	if strings.Contains(entry, ".") {
		return c.Methods[entry] != nil
	}
	for _, m := range c.Methods {
		if m.Name == entry {
			return true
		}
	}
	return false
}

// remoteToolEntryRE is the form of a tool filter entry naming a remote
// agent's tool, "<type>-<id>__<tool>" (the names the federation gives
// them), or, with a star ending a prefix, all of an agent's tools
// ("<type>-<id>__*") or every agent of a type ("<type>-*").
var remoteToolEntryRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}-([A-Za-z0-9_-]*\*|[A-Za-z0-9_-]{1,64}__[A-Za-z0-9_-]{1,64})$`)

func (b *builder) checkTool(at pth, name string) {
	if strings.Contains(name, "-") {
		// Only remote tools' names hold a hyphen. Their agents come and
		// go, so only the entry's form can be checked here.
		if !remoteToolEntryRE.MatchString(name) {
			b.errAt(at, 0, "%q: a remote agent's tool is named TYPE-ID__TOOL; a star ends a prefix: TYPE-ID__* (all its tools), TYPE-* (every agent of the type)", name)
		}
		return
	}
	if b.opts.KnownTools == nil || slices.ContainsFunc(b.opts.KnownTools, func(k string) bool { return agent.EntryNames(name, k) }) {
		return
	}
	if b.strictTools {
		b.errAt(at, 0, "unknown tool %q", name)
	} else {
		b.warnAt(at, 0, "unknown tool %q", name)
	}
}

func (b *builder) identity(n *yaml.Node, p pth) IdentitySpec {
	const want = "want master, anonymous, session, token, {user: <objectId or username>}, {role: <name>} or {roles: [<names>]}"
	n = resolveAlias(n)
	if isNull(n) {
		return IdentitySpec{}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch k := IdentityKind(n.Value); k {
		case IdentityMaster, IdentityAnonymous, IdentitySession, IdentityToken:
			return IdentitySpec{Kind: k}
		}
		b.errAt(p, n.Line, "%s, not %q", want, n.Value)
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			b.errAt(p, n.Line, "%s (one key)", want)
			return IdentitySpec{}
		}
		k, v := n.Content[0], resolveAlias(n.Content[1])
		switch k.Value {
		case "user":
			if v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "" || len(v.Value) > 128 {
				b.errAt(p.k("user"), v.Line, "want a _User objectId or username")
				return IdentitySpec{}
			}
			return IdentitySpec{Kind: IdentityUser, User: v.Value}
		case "role", "roles":
			var roles []string
			switch {
			case k.Value == "role" && v.Kind == yaml.ScalarNode && !isNull(v):
				roles = []string{v.Value}
			case k.Value == "roles" && v.Kind == yaml.SequenceNode && len(v.Content) > 0:
				for _, e := range v.Content {
					e = resolveAlias(e)
					if e.Kind != yaml.ScalarNode || isNull(e) {
						roles = nil
						break
					}
					roles = append(roles, e.Value)
				}
			}
			if roles == nil {
				b.errAt(p.k(k.Value), v.Line, "want a role name (role:) or a non-empty list of role names (roles:)")
				return IdentitySpec{}
			}
			for _, r := range roles {
				if !roleNameRE.MatchString(r) {
					b.errAt(p.k(k.Value), v.Line, "%q is not a valid role name (letters, digits, '_', '-' and spaces)", r)
					return IdentitySpec{}
				}
			}
			slices.Sort(roles)
			return IdentitySpec{Kind: IdentityRoles, Roles: slices.Compact(roles)}
		default:
			b.errAt(p, k.Line, "%s; unknown key %q", want, k.Value)
		}
	default:
		b.errAt(p, n.Line, "%s", want)
	}
	return IdentitySpec{}
}

func (b *builder) key(rk *rawKey, p pth) (Key, bool) {
	if rk == nil {
		b.errAt(p, 0, "want one of {env: VAR}, {sha256: <hex digest>} or {key: <token>}")
		return Key{}, false
	}
	n := 0
	for _, s := range []string{rk.Env, rk.SHA256, rk.Key} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		b.errAt(p, 0, "want exactly one of env, sha256 or key")
		return Key{}, false
	}
	switch {
	case rk.Env != "":
		if !envNameRE.MatchString(rk.Env) {
			b.errAt(p.k("env"), 0, "%q is not an environment variable name", rk.Env)
			return Key{}, false
		}
		k := Key{Source: "env", Env: rk.Env}
		if v, ok := b.opts.LookupEnv(rk.Env); ok && v != "" {
			k.digest, k.usable = sha256.Sum256([]byte(v)), true
		} else {
			b.warnAt(p.k("env"), 0, "environment variable %s is unset or empty; this key matches no token", rk.Env)
		}
		return k, true
	case rk.SHA256 != "":
		if !hexDigestRE.MatchString(rk.SHA256) {
			b.errAt(p.k("sha256"), 0, "want the 64 hex digits of the key's SHA-256 digest")
			return Key{}, false
		}
		k := Key{Source: "sha256", usable: true}
		_, _ = hex.Decode(k.digest[:], []byte(strings.ToLower(rk.SHA256)))
		return k, true
	}
	b.warnAt(p.k("key"), 0, "a literal key is readable by anyone who can read this file; prefer env or sha256")
	return Key{Source: "literal", digest: sha256.Sum256([]byte(rk.Key)), usable: true}, true
}

// nameFilter reads a list (the only list) or {only: [...], except: [...]};
// check is called for every name.
func (b *builder) nameFilter(n *yaml.Node, p pth, check func(pth, string)) agent.NameFilter {
	n = resolveAlias(n)
	var f agent.NameFilter
	if isNull(n) {
		return f
	}
	switch n.Kind {
	case yaml.SequenceNode:
		f.Only = b.names(n, p, check)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "only":
				if !isNull(v) {
					f.Only = b.names(v, p.k("only"), check)
				}
			case "except":
				if !isNull(v) {
					f.Except = b.names(v, p.k("except"), check)
				}
			default:
				b.errAt(p, k.Line, "unknown key %q (known keys: except, only)", k.Value)
			}
		}
	default:
		b.errAt(p, n.Line, "want a list of names (allowed names) or {only: [...], except: [...]}")
	}
	return f
}

func (b *builder) names(n *yaml.Node, p pth, check func(pth, string)) []string {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		b.errAt(p, n.Line, "want a list of names")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		e = resolveAlias(e)
		if e.Kind != yaml.ScalarNode || isNull(e) || e.Value == "" {
			b.errAt(p.i(i), e.Line, "want a name")
			continue
		}
		check(p.i(i), e.Value)
		if !slices.Contains(out, e.Value) {
			out = append(out, e.Value)
		}
	}
	return out
}

// parents checks parent references, loops, depth budgets and, by building
// the chain with placeholder identities, the narrowing rules of
// agent.(*Agent).Sub that need no database.
func (b *builder) parents(pol *Policy) {
	for _, name := range pol.Names() {
		prof := pol.Agents[name]
		if prof.Parent == "" {
			continue
		}
		pp := pth{"agents", name, "parent"}
		chain := []*Profile{prof}
		seen := map[string]bool{name: true}
		broken := false
		for cur := prof; cur.Parent != ""; {
			next := pol.Agents[cur.Parent]
			if next == nil {
				if cur == prof {
					b.errAt(pp, 0, "no agent profile %q", prof.Parent)
				}
				broken = true // an unknown parent further up is reported there
				break
			}
			if seen[next.Name] {
				names := []string{}
				for _, c := range chain {
					names = append(names, c.Name)
				}
				names = append(names, next.Name)
				b.errAt(pp, 0, "parent chain loops: %s", strings.Join(names, " → "))
				broken = true
				break
			}
			seen[next.Name] = true
			chain = append(chain, next)
			cur = next
		}
		if broken {
			continue
		}
		slices.Reverse(chain) // root first
		root := chain[0]
		a := agent.New(root.Permission, agent.Identity{Mode: agent.AuthMaster})
		a.Policy = agent.Policy{Name: root.Name, TenantID: root.Tenant, Tools: root.Tools, Classes: root.Classes, Methods: root.Methods}
		a.SetDepth(pol.rootDepth(root))
		ids := []IdentitySpec{root.Identity}
		for i, c := range chain[1:] {
			sub, err := a.Sub(subOptions(c, nil))
			if err != nil {
				switch {
				case c != prof: // reported for the profile that fails
				case errors.Is(err, agent.ErrRecursionLimit):
					names := make([]string, 0, len(chain))
					for _, x := range chain {
						names = append(names, x.Name)
					}
					b.errAt(pp, 0, "sub-agent chain %s is too deep: %s may create no further sub-agents (see settings.recursion_depth and depth)", strings.Join(names, " → "), chain[i].Name)
				default:
					b.errAt(pth{"agents", name}, 0, "%v", err)
				}
				break
			}
			if c == prof {
				if msg := identityNarrows(ids, c.Identity); msg != "" {
					b.errAt(pth{"agents", name, "identity"}, 0, "%s", msg)
				}
			}
			ids = append(ids, c.Identity)
			a = sub
		}
	}
}

// rootDepth is the sub-agent budget of a top-level profile.
func (p *Policy) rootDepth(root *Profile) int {
	if root.Depth > 0 {
		return root.Depth
	}
	return p.RecursionDepth
}

// identityNarrows checks, where it can without a database, that child
// holds no ACL entry its nearest ancestor with an identity lacks.
func identityNarrows(ancestors []IdentitySpec, child IdentitySpec) string {
	if child.Kind == IdentityInherit {
		return ""
	}
	var parent IdentitySpec
	for i := len(ancestors) - 1; i >= 0; i-- {
		if ancestors[i].Kind != IdentityInherit {
			parent = ancestors[i]
			break
		}
	}
	switch parent.Kind {
	case IdentityMaster, IdentityInherit:
		return ""
	}
	if child.Kind == IdentityMaster {
		return "a sub-agent cannot use the master key under a scoped parent"
	}
	if child.Kind == IdentityAnonymous {
		return ""
	}
	switch parent.Kind {
	case IdentityAnonymous:
		return "the parent acts anonymously, so a sub-agent may only be anonymous too"
	case IdentityRoles:
		if child.Kind == IdentityUser || child.Kind == IdentitySession || child.Kind == IdentityToken {
			return "a user identity holds its own user id, which the parent's roles identity does not"
		}
		for _, r := range child.Roles {
			if !slices.Contains(parent.Roles, r) {
				return fmt.Sprintf("role %q is not held by the parent", r)
			}
		}
	}
	return "" // the rest is checked when the agent is built
}

// subOptions narrows a sub-agent to profile c; id is its resolved
// identity (nil: inherit).
func subOptions(c *Profile, id *agent.Identity) agent.SubOptions {
	perm := c.Permission
	return agent.SubOptions{
		Name: c.Name, Permission: &perm, Identity: id, TenantID: c.Tenant,
		Tools: c.Tools, Classes: c.Classes, Methods: c.Methods,
		Filters: cloneFilters(c.Filters), Depth: c.Depth,
	}
}

// keyClashes refuses a token that would select two profiles.
func (b *builder) keyClashes(pol *Policy) {
	owner := map[[sha256.Size]byte]string{}
	for _, name := range pol.Names() {
		for i, k := range pol.Agents[name].Keys {
			if !k.usable {
				continue
			}
			if o, dup := owner[k.digest]; dup {
				if o == name {
					b.errAt(pth{"agents", name, "keys"}.i(i), 0, "the same key is listed twice")
				} else {
					b.errAt(pth{"agents", name, "keys"}.i(i), 0, "the same key also selects profile %q", o)
				}
				continue
			}
			owner[k.digest] = name
		}
	}
}
