package prompts

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/parsemcp/parsemcp/internal/shape"
)

// validName is ^[a-z][a-z0-9_]{0,63}$.
func validName(s string) bool { return shape.Lead(s, shape.Lower, nameChars, 64) }

var nameChars = shape.Lower.Or(shape.Digits, shape.Chars("_"))

// Registry is the set of prompts a server offers. It is safe for concurrent
// use.
type Registry struct {
	mu      sync.RWMutex
	prompts map[string]Prompt
	subs    map[int]func()
	next    int
}

// NewRegistry returns a registry holding the built-in prompts.
func NewRegistry() *Registry {
	r := &Registry{prompts: map[string]Prompt{}, subs: map[int]func(){}}
	for _, p := range Builtin() {
		if err := validate(p); err != nil {
			panic(err) // a built-in that does not validate is a programming error
		}
		r.prompts[p.Name] = clonePrompt(p)
	}
	return r
}

func validate(p Prompt) error {
	if !validName(p.Name) {
		return fmt.Errorf("prompt name %q: use a lowercase letter, then lowercase letters, digits and underscores (at most 64)", p.Name)
	}
	if p.Render == nil {
		return fmt.Errorf("prompt %s: nil Render", p.Name)
	}
	seen := map[string]bool{}
	for _, a := range p.Args {
		if a.Name == "" {
			return fmt.Errorf("prompt %s: an argument has no name", p.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("prompt %s: argument %q listed twice", p.Name, a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

func clonePrompt(p Prompt) Prompt {
	p.Args = slices.Clone(p.Args)
	return p
}

// Register adds p, replacing a prompt of the same name (a built-in too), and
// then calls the OnChange subscribers. It refuses a name outside
// [a-z][a-z0-9_]{0,63}, a nil Render and unnamed or duplicate arguments.
func (r *Registry) Register(p Prompt) error {
	if err := validate(p); err != nil {
		return err
	}
	r.mu.Lock()
	r.prompts[p.Name] = clonePrompt(p)
	subs := make([]func(), 0, len(r.subs))
	ids := make([]int, 0, len(r.subs))
	for id := range r.subs {
		ids = append(ids, id)
	}
	sort.Ints(ids) // subscribers run in subscription order
	for _, id := range ids {
		subs = append(subs, r.subs[id])
	}
	r.mu.Unlock()
	for _, f := range subs {
		f()
	}
	return nil
}

// Get returns the prompt called name.
func (r *Registry) Get(name string) (Prompt, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.prompts[name]
	if !ok {
		return Prompt{}, false
	}
	return clonePrompt(p), true
}

// List returns every prompt, sorted by name.
func (r *Registry) List() []Prompt {
	r.mu.RLock()
	out := make([]Prompt, 0, len(r.prompts))
	for _, p := range r.prompts {
		out = append(out, clonePrompt(p))
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// OnChange calls f after each successful Register, on the registering
// goroutine and outside the registry's lock (f may call List). The returned
// function unsubscribes; calling it again does nothing.
func (r *Registry) OnChange(f func()) (unsubscribe func()) {
	if f == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	r.subs[id] = f
	return func() {
		r.mu.Lock()
		delete(r.subs, id)
		r.mu.Unlock()
	}
}
