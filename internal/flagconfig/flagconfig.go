// Package flagconfig gives every flag of a command more sources than the
// command line: environment variables and a key of one YAML file
// (max-inflight: 8).
//
// A flag's own variable is PREFIX + its name in upper case, dashes as
// underscores (--max-inflight is PARSEMCP_MAX_INFLIGHT), or the one Env
// declares in its place. Alias declares weaker names for the same flag:
// the names another tool uses for the setting. The order is: the command
// line, then the flag's own variable, then its aliases in the order
// declared, then the file, then the default. A variable set to the empty
// string counts as unset.
//
// The environment is the process's, plus what a dotenv file added to it
// (LoadDotEnv: a variable already in the environment wins over the
// file's); Apply says which variable, and which file, each value came from.
//
// It walks the FlagSet, so a flag added to a command is configurable
// without touching this package. A file key that names no flag is refused
// with its line; so is a value the flag does not accept.
package flagconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/joho/godotenv"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	yamlv3 "go.yaml.in/yaml/v3"
)

// Kind says which source gave a flag its effective value.
type Kind string

// The sources, strongest first.
const (
	FromFlag    Kind = "flag"
	FromEnv     Kind = "env"
	FromFile    Kind = "file"
	FromDefault Kind = "default"
)

// Source says where a flag's effective value came from.
type Source struct {
	Kind Kind
	// Var is the environment variable that gave the value (FromEnv).
	Var string
	// DotEnv is the dotenv file Var was read from; empty when the
	// process's environment held it.
	DotEnv string
}

// String is the source as `parsemcp config` shows it: flag, env NAME,
// FILE NAME (a variable of a dotenv file, e.g. ".env MCP_API_KEY"), file
// or default.
func (s Source) String() string {
	switch {
	case s.Kind == FromEnv && s.DotEnv != "":
		return s.DotEnv + " " + s.Var
	case s.Kind == FromEnv:
		return "env " + s.Var
	}
	return string(s.Kind)
}

// Options name the environment prefix, the file and the flags to leave alone.
type Options struct {
	// Prefix of the variables made from flag names, e.g. "PARSEMCP_";
	// empty: only the variables Env and Alias declare are read.
	Prefix string
	// File is the YAML file's path; empty for none.
	File string
	// Skip lists flags neither the environment nor the file may set
	// (e.g. "config" itself, "help").
	Skip []string
	// Environ replaces os.Environ (tests).
	Environ func() []string
	// DotEnv is the dotenv file LoadDotEnv read into the environment, if
	// any: the values it gave are reported as its.
	DotEnv *DotEnv
}

// Sources maps each flag name to where its value came from.
type Sources map[string]Source

// EnvName is the variable Prefix makes of a flag's name.
func EnvName(prefix, flag string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// The annotations Env and Alias leave on a flag.
const (
	annotationEnv   = "flagconfig_env"
	annotationAlias = "flagconfig_alias"
)

// Env declares the variable that sets the flag in place of the one
// Options.Prefix makes of its name; with no name, no variable sets it.
// It panics when fs has no such flag (a mistake in the program).
func Env(fs *pflag.FlagSet, flag string, name ...string) {
	annotate(fs, flag, annotationEnv, name)
}

// Alias declares more variables that set the flag, weaker than its own
// and in the order given: the names another tool gives the same setting.
// It panics when fs has no such flag.
func Alias(fs *pflag.FlagSet, flag string, names ...string) {
	f := fs.Lookup(flag)
	if f == nil {
		panic("flagconfig.Alias: no flag --" + flag)
	}
	annotate(fs, flag, annotationAlias, append(slices.Clone(f.Annotations[annotationAlias]), names...))
}

func annotate(fs *pflag.FlagSet, flag, key string, values []string) {
	if values == nil {
		values = []string{}
	}
	if err := fs.SetAnnotation(flag, key, values); err != nil {
		panic("flagconfig: " + err.Error())
	}
}

// EnvNames lists the variables that set f, strongest first: its own (the
// declared one, or the one prefix makes of its name; none when prefix is
// empty and none is declared), then its aliases.
func EnvNames(f *pflag.Flag, prefix string) []string {
	own, declared := f.Annotations[annotationEnv]
	if !declared && prefix != "" {
		own = []string{EnvName(prefix, f.Name)}
	}
	return append(slices.Clone(own), f.Annotations[annotationAlias]...)
}

// DotEnv is a dotenv file whose variables were added to the process's
// environment.
type DotEnv struct {
	// Path is the file as named (".env").
	Path string
	// Set lists the variables the file gave: those the environment did
	// not already hold.
	Set []string
}

// LoadDotEnv reads a dotenv file (KEY=VALUE lines; comments, quotes and
// export as dotenv writes them) and sets each of its variables the
// process's environment does not already hold (or holds empty): the
// environment wins. A missing file is no error unless required; it
// returns nil then.
func LoadDotEnv(path string, required bool) (*DotEnv, error) {
	vars, err := godotenv.Read(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return nil, nil
	}
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		return nil, fmt.Errorf("dotenv file: %w", err)
	case err != nil:
		// The parser's message quotes the text around the fault, a
		// secret perhaps: name the file only.
		return nil, fmt.Errorf("dotenv file %s: not KEY=VALUE lines (a quote left open, a space in a name?)", path)
	}
	d := &DotEnv{Path: path}
	for k, v := range vars {
		if os.Getenv(k) != "" {
			continue // the environment's (an empty variable counts as unset)
		}
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, k, err)
		}
		d.Set = append(d.Set, k)
	}
	sort.Strings(d.Set)
	return d, nil
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
	environ := o.Environ
	if environ == nil {
		environ = os.Environ
	}
	env := map[string]string{}
	for _, kv := range environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			env[k] = v
		}
	}
	var fromDotEnv []string
	if o.DotEnv != nil {
		fromDotEnv = o.DotEnv.Set
	}
	src := Sources{}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Changed:
			src[f.Name] = Source{Kind: FromFlag}
			return
		case skip(f.Name):
			src[f.Name] = Source{Kind: FromDefault}
			return
		}
		for _, name := range EnvNames(f, o.Prefix) {
			v, ok := env[name]
			if !ok {
				continue
			}
			s := Source{Kind: FromEnv, Var: name}
			if slices.Contains(fromDotEnv, name) {
				s.DotEnv = o.DotEnv.Path
			}
			src[f.Name] = s
			if err := set(fs, f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s, err))
			}
			return
		}
		if file.Exists(f.Name) {
			src[f.Name] = Source{Kind: FromFile}
			if err := set(fs, f, file.Get(f.Name)); err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %w", o.File, lines[f.Name], f.Name, err))
			}
			return
		}
		src[f.Name] = Source{Kind: FromDefault}
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
