package tools

import (
	"encoding/json"

	"github.com/parsemcp/parsemcp/agent"
)

// Call is one invocation of a tool.
type Call struct {
	Scope    *agent.Scope
	Args     json.RawMessage
	Registry *Registry
	Config   *Config
	// Approve, when set, is asked before a destructive change runs
	// (delete_object, delete_class, destructive methods); nil approves.
	Approve ApproveFunc
	// Catalog, when set, returns the tools the calling agent may call,
	// optionally of one category: the server's full catalog (remote
	// agents' tools included, its token's scope applied). Nil: the
	// registry's tools the agent is allowed.
	Catalog func(category string) []*Tool
}

// allowed returns the tools the calling agent may call (of category, when
// not empty).
func (c *Call) allowed(category string) []*Tool {
	switch {
	case c.Catalog != nil:
		return c.Catalog(category)
	case c.Registry == nil:
		return nil
	}
	return c.Registry.Allowed(c.Scope.Agent(), c.gates(), category)
}

// withScope returns a copy of c running in scope.
func (c *Call) withScope(scope *agent.Scope) *Call {
	if scope == c.Scope {
		return c
	}
	cc := *c
	cc.Scope = scope
	return &cc
}

// config returns the call's configuration (DefaultConfig without one).
func (c *Call) config() *Config {
	if c.Config == nil {
		return &DefaultConfig
	}
	return c.Config
}

// gates returns the operator gates of the call (all closed without a
// configuration).
func (c *Call) gates() agent.Gates {
	if c.Config == nil {
		return agent.Gates{}
	}
	return c.Config.Gates
}

// Config is the operator's tuning of the built-in tools.
type Config struct {
	// FullScanThreshold: under RefuseFullScans, a plan that reads a whole
	// class holding more rows than this is refused; explain_query reports
	// the row count of a full scan when it is set (0: no threshold).
	FullScanThreshold int64
	// ExposeExplain shows the database's plan text and the names of the
	// indexes a plan uses in explain_query, and index names and keys in
	// get_schema. Off by default: a plan is an oracle of the index layout.
	ExposeExplain bool
	// RefuseFullScans makes every read tool that can scan (query_class,
	// count_objects, export_data, aggregate, group_by, group_by_date,
	// distinct, get_sample_objects) and explain_query refuse a query whose
	// plan reads every row of a class larger than FullScanThreshold
	// (opt-in). A pipeline is judged by the find of its leading $match.
	RefuseFullScans bool
	// FullScanAllowed are the classes RefuseFullScans spares, besides
	// those the policy marks allow_full_scan (agent.ClassMeta).
	FullScanAllowed []string
	// Gates are the operator's switches for the write and schema tools
	// and for declared methods (agent.Gates); the zero value keeps every
	// write path closed.
	Gates agent.Gates
}

// DefaultConfig is the configuration when the operator sets none.
var DefaultConfig = Config{FullScanThreshold: 10000}
