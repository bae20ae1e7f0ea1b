// Package flagconfig gives every flag of a command two more sources: an
// environment variable (PREFIX + the flag name in upper case, dashes as
// underscores: --max-inflight is PARSEMCP_MAX_INFLIGHT) and a key of one
// YAML file (max-inflight: 8). A flag on the command line wins over the
// environment, which wins over the file, which wins over the default.
//
// It walks the FlagSet, so a flag added to a command is configurable
// without touching this package. A file key that names no flag is refused
// with its line; so is a value the flag does not accept.
package flagconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	yamlv3 "go.yaml.in/yaml/v3"
)

// Source says where a flag's effective value came from.
type Source string

// The sources, strongest first.
const (
	FromFlag    Source = "flag"
	FromEnv     Source = "env"
	FromFile    Source = "file"
	FromDefault Source = "default"
)

// Options name the environment prefix, the file and the flags to leave alone.
type Options struct {
	// Prefix of the environment variables, e.g. "PARSEMCP_".
	Prefix string
	// File is the YAML file's path; empty for none.
	File string
	// Skip lists flags neither the environment nor the file may set
	// (e.g. "config" itself, "help").
	Skip []string
	// Environ replaces os.Environ (tests).
	Environ func() []string
}

// Sources maps each flag name to where its value came from.
type Sources map[string]Source

// EnvName is the environment variable that sets the flag.
func EnvName(prefix, flag string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply sets every flag the command line did not set from the environment
// or, failing that, from the file, and reports each flag's source.
func Apply(fs *pflag.FlagSet, o Options) (Sources, error) {
	skip := func(name string) bool { return slices.Contains(o.Skip, name) || name == "help" }
	var lines map[string]int
	file := koanf.New(".")
	if o.File != "" {
		raw, err := os.ReadFile(o.File)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		lines, err = keyLines(o.File, raw)
		if err != nil {
			return nil, err
		}
		for key, line := range lines {
			if fs.Lookup(key) == nil || skip(key) {
				return nil, fmt.Errorf("%s:%d: unknown key %q (no flag --%s)", o.File, line, key, key)
			}
		}
		if err := file.Load(rawbytes.Provider(raw), yaml.Parser()); err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
	}
	environ := koanf.New(".")
	err := environ.Load(env.Provider("", env.Opt{
		Prefix:      o.Prefix,
		EnvironFunc: o.Environ,
		TransformFunc: func(k, v string) (string, any) {
			name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, o.Prefix), "_", "-"))
			if fs.Lookup(name) == nil || skip(name) || EnvName(o.Prefix, name) != k {
				return "", nil // another command's variable
			}
			return name, v
		},
	}), nil)
	if err != nil {
		return nil, err
	}
	src := Sources{}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Changed:
			src[f.Name] = FromFlag
		case skip(f.Name):
			src[f.Name] = FromDefault
		case environ.Exists(f.Name):
			src[f.Name] = FromEnv
			if err := set(fs, f, environ.Get(f.Name)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", EnvName(o.Prefix, f.Name), err))
			}
		case file.Exists(f.Name):
			src[f.Name] = FromFile
			if err := set(fs, f, file.Get(f.Name)); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %w", o.File, lines[f.Name], f.Name, err))
			}
		default:
			src[f.Name] = FromDefault
		}
	})
	return src, errors.Join(errs...)
}

// keyLines returns the line of each top-level key of a YAML mapping.
func keyLines(path string, raw []byte) (map[string]int, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lines := map[string]int{}
	if len(doc.Content) == 0 {
		return lines, nil // empty file
	}
	m := doc.Content[0]
	if m.Kind != yamlv3.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of flag names to values", path, m.Line)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if _, dup := lines[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d: key %q given twice", path, k.Line, k.Value)
		}
		lines[k.Value] = k.Line
	}
	return lines, nil
}

// set gives a flag a value read from YAML or the environment: lists
// replace a slice flag's value, mappings become k=v pairs.
func set(fs *pflag.FlagSet, f *pflag.Flag, v any) error {
	switch v := v.(type) {
	case []any:
		items := make([]string, len(v))
		for i, x := range v {
			items[i] = fmt.Sprint(x)
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			if err := sv.Replace(items); err != nil {
				return err
			}
			f.Changed = true
			return nil
		}
		return fs.Set(f.Name, strings.Join(items, ","))
	case map[string]any:
		if len(v) == 0 {
			return nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b bytes.Buffer
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%v", k, v[k])
		}
		return fs.Set(f.Name, b.String())
	case nil:
		return fs.Set(f.Name, "")
	default:
		return fs.Set(f.Name, fmt.Sprint(v))
	}
}
