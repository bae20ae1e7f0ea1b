package policy

// The YAML decoder's errors rewritten for the policy's author: unknown keys
// with the known ones, type errors in the file's terms, at their line and path.

import (
	"errors"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
