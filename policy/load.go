package policy

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/shape"
	"github.com/parsemcp/parsemcp/parse"
)

// The names a policy holds (internal/shape: checks without regexps).
var (
	profileNameChars = shape.Alnum.Or(shape.Chars("_.-"))
	roleNameChars    = shape.Word.Or(shape.Chars("- "))
	envNameFirst     = shape.Letters.Or(shape.Chars("_"))
)

// validProfileName is ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$.
func validProfileName(s string) bool { return shape.Lead(s, shape.Alnum, profileNameChars, 64) }

// validMethodName is ^[A-Za-z][A-Za-z0-9_]{0,63}$.
func validMethodName(s string) bool { return shape.Lead(s, shape.Letters, shape.Word, 64) }

// validRoleName is ^[A-Za-z0-9_\- ]{1,128}$.
func validRoleName(s string) bool { return shape.Run(s, roleNameChars, 1, 128) }

// validEnvName is ^[A-Za-z_][A-Za-z0-9_]{0,127}$.
func validEnvName(s string) bool { return shape.Lead(s, envNameFirst, shape.Word, 128) }

// validHexDigest is ^[0-9a-fA-F]{64}$.
func validHexDigest(s string) bool { return shape.Run(s, shape.Hex, 64, 64) }

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
	// profiles are the agent profile names the file declares (for the
	// class entries that name them, read before the profiles).
	profiles map[string]bool
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
	b.profiles = map[string]bool{}
	for name := range raw.Agents {
		b.profiles[name] = true
	}
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
	b.bypassReach(pol)
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
