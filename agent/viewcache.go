package agent

// Shared class views: the schema an agent sees of a class (Scope.view)
// built once per store schema and view, and handed to every call that
// sees the class the same way.

import (
	"crypto/sha256"
	"encoding/binary"
	"reflect"
	"slices"
	"sync"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/internal/selfcheck"
	"github.com/parsemcp/parsemcp/parse"
)

// maxSharedViews bounds the cache: past it the cache starts afresh. Its
// keys are the classes times the distinct views of each (the master key,
// each set of fields some principal does not see), so the bound is only
// reached by a deployment with unusually many of those.
const maxSharedViews = 1024

// views caches the views Scope.Class hands out. A view is a function of
// three things only (Scope.view): the store's schema, the set of fields
// the agent sees, and whether it holds the master key (which alone sees
// the protectedFields of the class-level permissions). The key holds the
// last two; the entry holds the store schema it was built from, and a
// call whose store schema is another one (the class changed, or another
// store) builds and keeps a new view.
var views = viewCache{m: map[string]*sharedView{}}

type viewCache struct {
	mu sync.RWMutex
	m  map[string]*sharedView
}

type sharedView struct {
	// from is the Fields of the store schema the view was built from.
	// A store never changes a shared schema in place
	// (store.SharedSchemas), so while the entry holds the map no other
	// schema can have it: the identity of the map is the schema's.
	from map[string]parse.Field
	view parse.Schema
	// sum is the view's encoding when it was built, kept in test
	// binaries only (selfcheck.On): every hit checks it (checkUnchanged).
	sum [sha256.Size]byte
}

// sharedView returns the view of raw, a store's shared schema, with the
// fields prot hides removed, built once and shared: the caller must not
// change it.
func (s *Scope) sharedView(raw parse.Schema, prot []string) parse.Schema {
	if raw.Fields == nil {
		return s.view(raw, prot)
	}
	var buf [256]byte
	key := s.viewKey(buf[:0], raw, prot)
	views.mu.RLock()
	e := views.m[string(key)]
	views.mu.RUnlock()
	if e != nil && sameMap(e.from, raw.Fields) {
		if selfcheck.On() {
			e.checkUnchanged()
		}
		return e.view
	}
	e = &sharedView{from: raw.Fields, view: s.view(raw, prot)}
	if selfcheck.On() {
		e.sum = viewSum(e.view)
	}
	views.mu.Lock()
	if len(views.m) >= maxSharedViews {
		clear(views.m)
	}
	views.m[string(key)] = e
	views.mu.Unlock()
	return e.view
}

// viewKey appends to b what, with the store schema, decides raw's view
// for this agent: the class, whether the agent holds the master key, and
// the fields of raw the view leaves out (Scope.shows), sorted. Each name
// is preceded by its length, so no two lists of names (whatever bytes a
// stored name holds) make one key.
func (s *Scope) viewKey(b []byte, raw parse.Schema, prot []string) []byte {
	b = appendName(b, raw.ClassName)
	if s.principal().Master {
		b = append(b, 'm')
	} else {
		b = append(b, '-')
	}
	var arr [16]string
	out := arr[:0]
	for name, f := range raw.Fields {
		if !s.shows(raw, prot, name, f) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	for _, name := range out {
		b = appendName(b, name)
	}
	return b
}

func appendName(b []byte, name string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(name))), name...)
}

// sameMap reports whether a and b are the same map (not equal ones).
func sameMap(a, b map[string]parse.Field) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// checkUnchanged panics when a caller changed a shared view: a view is
// shared by every call that sees its class the same way, so a change made
// by one call would reach the others (a field put back, a permission
// widened). Test binaries check it on every hit, so the suites that run
// every tool catch such a caller.
func (e *sharedView) checkUnchanged() {
	if viewSum(e.view) != e.sum {
		panic("agent: a shared class view (Class.Schema) was changed by its caller; copy it (parse.Schema.Clone) before changing it")
	}
}

func viewSum(v parse.Schema) [sha256.Size]byte {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		panic("agent: encode a class view: " + err.Error())
	}
	return sha256.Sum256(b)
}
