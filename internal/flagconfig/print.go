package flagconfig

import (
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	yamlv3 "go.yaml.in/yaml/v3"
)

// Mask replaces secret values in what Print writes.
const Mask = "********"

// secretName matches flags whose whole value is a secret.
var secretName = regexp.MustCompile(`(^|-)(key|password|secret|token|credentials?)s?$`)

// secretParam matches URL query parameters that hold secrets.
var secretParam = regexp.MustCompile(`(?i)(password|passwd|secret|token|key)`)

// Secret reports whether a flag's value is a secret as a whole.
func Secret(f *pflag.Flag) bool {
	return secretName.MatchString(f.Name) || f.Annotations["secret"] != nil
}

// MaskValue hides a value's secrets: all of it for a secret flag, else
// what Redact hides.
func MaskValue(f *pflag.Flag, v string) string {
	if v == "" {
		return v
	}
	if Secret(f) {
		return Mask
	}
	return Redact(v)
}

// In text that is not one URL (a keyword/value connection string, an
// error message quoting a malformed URL): the password of a URL's
// userinfo, secret-looking query parameters, and password=… of
// PostgreSQL's host=h user=u password=p, quoted or not.
var (
	secretUserinfo = regexp.MustCompile(`(?i)([a-z][a-z0-9+.\-]*://[^/?#@:\s]*:)[^@\s]*@`)
	secretQuery    = regexp.MustCompile(`(?i)([?&][a-z0-9_.\-]*(?:password|passwd|secret|token|key)[a-z0-9_.\-]*=)[^&#\s"'\x60]*`)
	secretKeyword  = regexp.MustCompile(`(?i)((?:^|\s)password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)
)

// Redact hides the secrets inside a value that is not a secret as a
// whole: a URL's password and secret-looking query parameters, and the
// password of a keyword/value connection string; in any other text (an
// error message) the same secrets wherever they appear. It is the one
// rule for `parsemcp config` and for every log line and error that shows
// a store, broker, Redis or authorization-server address.
func Redact(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Opaque != "" || strings.ContainsAny(v, " \t\n") {
		v = secretUserinfo.ReplaceAllString(v, "${1}"+Mask+"@")
		v = secretQuery.ReplaceAllString(v, "${1}"+Mask)
		return secretKeyword.ReplaceAllString(v, "${1}"+Mask)
	}
	if u.User == nil && u.RawQuery == "" {
		return v
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	for k := range q {
		if secretParam.MatchString(k) {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return strings.ReplaceAll(u.String(), "xxxxx", Mask)
}

// Print writes the effective value of every flag (but skip) as a YAML
// config file, each line commented with its source; secrets are masked.
// Its output is a valid --config file.
func Print(w io.Writer, fs *pflag.FlagSet, src Sources, skip ...string) error {
	doc := &yamlv3.Node{Kind: yamlv3.MappingNode}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || slices.Contains(skip, f.Name) || f.Hidden {
			return
		}
		key := &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: f.Name}
		val := &yamlv3.Node{}
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			items := v.GetSlice()
			for i := range items {
				items[i] = MaskValue(f, items[i])
			}
			_ = val.Encode(items)
		default:
			s := MaskValue(f, f.Value.String())
			switch f.Value.Type() {
			case "bool", "int", "int64", "int32", "uint", "uint64", "float64", "float32", "count":
				val = &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: s}
			case "stringToString":
				s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
				m := map[string]string{}
				for _, kv := range strings.Split(s, ",") {
					if k, v, ok := strings.Cut(kv, "="); ok {
						m[k] = v
					}
				}
				_ = val.Encode(m)
			default:
				_ = val.Encode(s)
			}
		}
		if val.Kind == yamlv3.ScalarNode {
			key.LineComment = src[f.Name].String()
		} else {
			val.Style, val.LineComment = yamlv3.FlowStyle, src[f.Name].String()
		}
		doc.Content = append(doc.Content, key, val)
	})
	enc := yamlv3.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}
