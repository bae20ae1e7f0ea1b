package policy

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
)

// base is a valid profile that error cases extend.
const base = "agents:\n  a:\n    identity: master\n"

var loadCases = []struct {
	name, yaml, want string
}{
	{"unknown top-level key", "agentz: {}\n",
		"p.yaml:1: unknown key \"agentz\" in the policy file (known keys: agents, classes, methods, oauth, settings)"},
	{"unknown profile key", base + "    toolz: [x]\n",
		"p.yaml:4: agents.a: unknown key \"toolz\" in an agent profile (known keys: classes, depth, filters, identity, introspection, keys, methods, parent, permission, tenant, tools)"},
	{"unknown settings key", "settings:\n  strict: true\n",
		"p.yaml:2: settings: unknown key \"strict\" in settings (known keys: default_agent, recursion_depth, strict_class_filter, strict_tool_filter)"},
	{"unknown class key", "classes:\n  Ticket:\n    descripton: x\n",
		"p.yaml:3: classes.Ticket: unknown key \"descripton\" in a class (known keys: agent_fields, allow_full_scan, canonical_filter, default_acl, description, fields, hidden, join_fields, large_fields, tenant)"},
	{"unknown method key", "methods:\n  Ticket.close:\n    update: {status: closed}\n    dry_run: true\n",
		"p.yaml:4: methods.Ticket.close: unknown key \"dry_run\" in a method (known keys: create, description, destructive, go, instance, parameters, permission, supports_dry_run, update)"},
	{"bad permission", base + "    permission: root\n",
		"p.yaml:4: agents.a.permission: unknown permission \"root\" (use readonly, write or admin)"},
	{"missing identity", "agents:\n  a:\n    permission: write\n",
		"p.yaml:2: agents.a: identity is required: master, anonymous, session, {user: <objectId or username>} or {roles: [<role names>]}"},
	{"bad identity scalar", "agents:\n  a:\n    identity: root\n",
		"p.yaml:3: agents.a.identity: want master, anonymous, session, token, {user: <objectId or username>}, {role: <name>} or {roles: [<names>]}, not \"root\""},
	{"identity two keys", "agents:\n  a:\n    identity: {user: x, role: y}\n",
		"p.yaml:3: agents.a.identity: want master, anonymous, session, token, {user: <objectId or username>}, {role: <name>} or {roles: [<names>]} (one key)"},
	{"identity unknown key", "agents:\n  a:\n    identity: {group: x}\n",
		"p.yaml:3: agents.a.identity: want master, anonymous, session, token, {user: <objectId or username>}, {role: <name>} or {roles: [<names>]}; unknown key \"group\""},
	{"identity empty roles", "agents:\n  a:\n    identity: {roles: []}\n",
		"p.yaml:3: agents.a.identity.roles: want a role name (role:) or a non-empty list of role names (roles:)"},
	{"bad role name", "agents:\n  a:\n    identity: {roles: [\"a:b\"]}\n",
		"p.yaml:3: agents.a.identity.roles: \"a:b\" is not a valid role name (letters, digits, '_', '-' and spaces)"},
	{"key two sources", base + "    keys: [{env: A, key: b}]\n",
		"p.yaml:4: agents.a.keys[0]: want exactly one of env, sha256 or key"},
	{"key none", base + "    keys: [{}]\n",
		"p.yaml:4: agents.a.keys[0]: want exactly one of env, sha256 or key"},
	{"key bad sha256", base + "    keys: [{sha256: abc}]\n",
		"p.yaml:4: agents.a.keys[0].sha256: want the 64 hex digits of the key's SHA-256 digest"},
	{"key bad env name", base + "    keys: [{env: \"1X\"}]\n",
		"p.yaml:4: agents.a.keys[0].env: \"1X\" is not an environment variable name"},
	{"key unknown field", base + "    keys: [{secret: x}]\n",
		"p.yaml:4: agents.a.keys[0]: unknown key \"secret\" in a key (known keys: env, key, sha256)"},
	{"key clash", "agents:\n  a:\n    identity: master\n    keys: [{key: same}]\n  b:\n    identity: master\n    keys: [{sha256: \"" + sha256hex("same") + "\"}]\n",
		"p.yaml:7: agents.b.keys[0]: the same key also selects profile \"a\""},
	{"key twice", base + "    keys: [{key: same}, {key: same}]\n",
		"p.yaml:4: agents.a.keys[1]: the same key is listed twice"},
	{"tools not a list", base + "    tools: query_class\n",
		"p.yaml:4: agents.a.tools: want a list of names (allowed names) or {only: [...], except: [...]}"},
	{"tools unknown key", base + "    tools: {allow: [query_class]}\n",
		"p.yaml:4: agents.a.tools: unknown key \"allow\" (known keys: except, only)"},
	{"tools strict unknown", "settings: {strict_tool_filter: true}\n" + base + "    tools: {except: [query_clas]}\n",
		"p.yaml:5: agents.a.tools.except[0]: unknown tool \"query_clas\""},
	{"tools bad remote entry", base + "    tools: {except: [device-d1/read]}\n",
		"p.yaml:4: agents.a.tools.except[0]: \"device-d1/read\": a remote agent's tool is named TYPE-ID__TOOL; a star ends a prefix: TYPE-ID__* (all its tools), TYPE-* (every agent of the type)"},
	{"tools remote entry without a tool", base + "    tools: {except: [device-d1__]}\n",
		"p.yaml:4: agents.a.tools.except[0]: \"device-d1__\": a remote agent's tool is named TYPE-ID__TOOL; a star ends a prefix: TYPE-ID__* (all its tools), TYPE-* (every agent of the type)"},
	{"tools strict unknown prefix", "settings: {strict_tool_filter: true}\n" + base + "    tools: [quer_*]\n",
		"p.yaml:5: agents.a.tools[0]: unknown tool \"quer_*\""},
	{"classes invalid name", base + "    classes: [\"Ti cket\"]\n",
		"p.yaml:4: agents.a.classes[0]: \"Ti cket\" is not a valid class name"},
	{"methods invalid entry", base + "    methods: [\"Ticket.\"]\n",
		"p.yaml:4: agents.a.methods[0]: \"Ticket.\" is not a method name (use \"name\" for any class or \"Class.name\")"},
	{"filter class name", base + "    filters: {\"9x\": {a: 1}}\n",
		"p.yaml:4: agents.a.filters.9x: not a valid class name (or :default)"},
	{"filter not a mapping", base + "    filters: {Ticket: [1]}\n",
		"p.yaml:4: agents.a.filters.Ticket: want a where-constraint mapping, e.g. {archived: {$ne: true}}"},
	{"filter $where", base + "    filters: {Ticket: {$or: [{a: 1}, {$where: \"1\"}]}}\n",
		"p.yaml:4: agents.a.filters.Ticket.$or[1].$where: $where runs code on the database and is not allowed in a policy filter"},
	{"filter $function in value", base + "    filters: {Ticket: {a: {$expr: {$function: {}}}}}\n",
		"p.yaml:4: agents.a.filters.Ticket.a.$expr.$function: $function runs code on the database and is not allowed in a policy filter"},
	{"filter _rperm", base + "    filters: {Ticket: {_rperm: {$in: [x]}}}\n",
		"p.yaml:4: agents.a.filters.Ticket._rperm: \"_rperm\" is an internal field; a policy filter may not name it"},
	{"filter sessionToken", base + "    filters: {\":default\": {sessionToken: x}}\n",
		"p.yaml:4: agents.a.filters.:default.sessionToken: \"sessionToken\" is an internal field; a policy filter may not name it"},
	{"filter inQuery internal", base + "    filters: {Ticket: {project: {$inQuery: {className: Project, where: {_auth_data_google: 1}}}}}\n",
		"p.yaml:4: agents.a.filters.Ticket.project.$inQuery.where._auth_data_google: \"_auth_data_google\" is an internal field; a policy filter may not name it"},
	{"filter select key", base + "    filters: {Ticket: {a: {$select: {query: {className: B, where: {}}, key: _hashed_password}}}}\n",
		"p.yaml:4: agents.a.filters.Ticket.a.$select.key: \"_hashed_password\" is an internal field; a policy filter may not name it"},
	{"depth zero", base + "    depth: 0\n",
		"p.yaml:4: agents.a.depth: must be at least 1 (settings.recursion_depth: 0 allows no sub-agents at all)"},
	{"depth over budget", "settings: {recursion_depth: 2}\n" + base + "    depth: 3\n",
		"p.yaml:5: agents.a.depth: 3 exceeds settings.recursion_depth (2); depth may only tighten it"},
	{"recursion_depth negative", "settings: {recursion_depth: -1}\n",
		"p.yaml:1: settings.recursion_depth: must be between 0 and 64, not -1"},
	{"recursion_depth type", "settings:\n  recursion_depth: many\n",
		"p.yaml:2: settings.recursion_depth: want an integer, not a string `many`"},
	{"default_agent unknown", "settings: {default_agent: b}\n" + base,
		"p.yaml:1: settings.default_agent: no agent profile \"b\""},
	{"bad profile name", "agents:\n  \"a b\":\n    identity: master\n",
		"p.yaml:2: agents.a b: profile names are a letter or digit followed by letters, digits, '.', '_' or '-' (at most 64)"},
	{"parent unknown", "agents:\n  a:\n    parent: b\n",
		"p.yaml:3: agents.a.parent: no agent profile \"b\""},
	{"parent self loop", "agents:\n  a:\n    parent: a\n",
		"p.yaml:3: agents.a.parent: parent chain loops: a → a"},
	{"parent loop", "agents:\n  a:\n    parent: b\n  b:\n    parent: a\n",
		"p.yaml:3: agents.a.parent: parent chain loops: a → b → a\np.yaml:5: agents.b.parent: parent chain loops: b → a → b"},
	{"parent chain too deep", "settings: {recursion_depth: 1}\nagents:\n  a:\n    identity: master\n  b:\n    parent: a\n  c:\n    parent: b\n",
		"p.yaml:8: agents.c.parent: sub-agent chain a → b → c is too deep: b may create no further sub-agents (see settings.recursion_depth and depth)"},
	{"parent depth tightens", "agents:\n  a:\n    identity: master\n    depth: 1\n  b:\n    parent: a\n    depth: 1\n  c:\n    parent: b\n",
		"p.yaml:9: agents.c.parent: sub-agent chain a → b → c is too deep: b may create no further sub-agents (see settings.recursion_depth and depth)"},
	{"introspection below admin", base + "    permission: write\n    introspection: true\n",
		"p.yaml:5: agents.a.introspection: describe_agent and would_permit are admin tools: introspection needs permission: admin"},
	{"child widens introspection", "agents:\n  a:\n    identity: master\n    permission: admin\n  b:\n    parent: a\n    permission: admin\n    introspection: true\n",
		"p.yaml:5: agents.b: sub-agent introspection exceeds its parent's"},
	{"child widens permission", "agents:\n  a:\n    identity: master\n  b:\n    parent: a\n    permission: write\n",
		"p.yaml:4: agents.b: sub-agent permission write exceeds its parent's readonly"},
	{"child master under roles", "agents:\n  a:\n    identity: {roles: [X]}\n    permission: admin\n  b:\n    parent: a\n    identity: master\n",
		"p.yaml:7: agents.b.identity: a sub-agent cannot use the master key under a scoped parent"},
	{"child role not held", "agents:\n  a:\n    identity: {roles: [X]}\n  b:\n    parent: a\n    identity: {roles: [X, Y]}\n",
		"p.yaml:6: agents.b.identity: role \"Y\" is not held by the parent"},
	{"child user under roles", "agents:\n  a:\n    identity: {roles: [X]}\n  b:\n    parent: a\n    identity: {user: u}\n",
		"p.yaml:6: agents.b.identity: a user identity holds its own user id, which the parent's roles identity does not"},
	{"child under anonymous", "agents:\n  a:\n    identity: anonymous\n  b:\n    parent: a\n    identity: {roles: [X]}\n",
		"p.yaml:6: agents.b.identity: the parent acts anonymously, so a sub-agent may only be anonymous too"},
	{"child tenant differs", "agents:\n  a:\n    identity: master\n    tenant: T1\n  b:\n    parent: a\n    tenant: T2\n",
		"p.yaml:5: agents.b: sub-agent tenant \"T2\" differs from its parent's"},
	{"child classes disjoint", "agents:\n  a:\n    identity: master\n    classes: [A]\n  b:\n    parent: a\n    classes: [B]\n",
		"p.yaml:5: agents.b: sub-agent classes filter [B] shares nothing with its parent's [A]"},
	{"class invalid name", "classes:\n  \"1A\": {}\n",
		"p.yaml:2: classes.1A: not a valid class name"},
	{"hidden bad", "classes:\n  A: {hidden: sometimes}\n",
		"p.yaml:2: classes.A.hidden: want true, false, except_master or always, not \"sometimes\""},
	{"hidden list", "classes:\n  A: {hidden: [x]}\n",
		"p.yaml:2: classes.A.hidden: want true, false, except_master or always"},
	{"join not in agent", "classes:\n  A: {agent_fields: [a, b], join_fields: [a, c, d]}\n",
		"p.yaml:2: classes.A.join_fields: \"c\", \"d\" not in agent_fields (join_fields may only narrow agent_fields)"},
	{"field list internal", "classes:\n  A: {agent_fields: [a, _rperm]}\n",
		"p.yaml:2: classes.A.agent_fields[1]: \"_rperm\" is an internal field; the policy may not name it"},
	{"field list invalid", "classes:\n  A: {large_fields: [\"a-b\"]}\n",
		"p.yaml:2: classes.A.large_fields[0]: \"a-b\" is not a valid field name"},
	{"field list twice", "classes:\n  A: {agent_fields: [a, a]}\n",
		"p.yaml:2: classes.A.agent_fields[1]: \"a\" listed twice"},
	{"fields invalid name", "classes:\n  A:\n    fields: {\"x y\": {description: d}}\n",
		"p.yaml:3: classes.A.fields.x y: \"x y\" is not a valid field name"},
	{"enum twice", "classes:\n  A:\n    fields: {s: {enum: [a, {value: a}]}}\n",
		"p.yaml:3: classes.A.fields.s.enum[1]: value \"a\" listed twice"},
	{"enum no value", "classes:\n  A:\n    fields: {s: {enum: [{description: d}]}}\n",
		"p.yaml:3: classes.A.fields.s.enum[0]: an enum entry needs a value"},
	{"enum unknown key", "classes:\n  A:\n    fields: {s: {enum: [{value: a, label: b}]}}\n",
		"p.yaml:3: classes.A.fields.s.enum[0]: unknown key \"label\" in an enum value (known keys: description, value)"},
	{"enum list", "classes:\n  A:\n    fields: {s: {enum: [[a]]}}\n",
		"p.yaml:3: classes.A.fields.s.enum[0]: want a value, or {value: ..., description: ...}"},
	{"canonical not a mapping", "classes:\n  A: {canonical_filter: [a]}\n",
		"p.yaml:2: classes.A.canonical_filter: want a where-constraint mapping, e.g. {archived: {$ne: true}}"},
	{"canonical $accumulator", "classes:\n  A: {canonical_filter: {a: {$accumulator: 1}}}\n",
		"p.yaml:2: classes.A.canonical_filter.a.$accumulator: $accumulator runs code on the database and is not allowed in a policy filter"},
	{"tenant no field", "classes:\n  A: {tenant: {bypass: admin}}\n",
		"p.yaml:2: classes.A.tenant: field is required (the String or Pointer field holding the tenant)"},
	{"tenant bad bypass", "classes:\n  A: {tenant: {field: org, bypass: everyone}}\n",
		"p.yaml:2: classes.A.tenant.bypass: want admin, or a mapping of rules {permission: write|admin, agents: [<profile names>]}, not \"everyone\""},
	{"tenant bypass unknown rule", "classes:\n  A:\n    tenant:\n      field: org\n      bypass: {permission: admin, roles: [x]}\n",
		"p.yaml:5: classes.A.tenant.bypass: unknown key \"roles\" in tenant bypass rules (known keys: agents, permission)"},
	{"tenant bypass readonly", "classes:\n  A: {tenant: {field: org, bypass: {permission: readonly}}}\n",
		"p.yaml:2: classes.A.tenant.bypass.permission: want write or admin (agents at that tier or above bypass), not \"readonly\""},
	{"tenant bypass empty agents", "classes:\n  A: {tenant: {field: org, bypass: {agents: []}}}\n",
		"p.yaml:2: classes.A.tenant.bypass.agents: want a non-empty list of agent profile names"},
	{"tenant bypass no rule", "classes:\n  A: {tenant: {field: org, bypass: {}}}\n",
		"p.yaml:2: classes.A.tenant.bypass: want admin, or a mapping of rules {permission: write|admin, agents: [<profile names>]}; an empty mapping names no rule (leave bypass out for none)"},
	{"tenant bypass unknown agent", base + "classes:\n  A:\n    tenant:\n      field: org\n      bypass:\n        agents: [a, ops]\n",
		"p.yaml:9: classes.A.tenant.bypass.agents[1]: no agent profile \"ops\""},
	{"tenant bypass agent twice", base + "classes:\n  A: {tenant: {field: org, bypass: {agents: [a, a]}}}\n",
		"p.yaml:5: classes.A.tenant.bypass.agents[1]: \"a\" listed twice"},
	{"tenant bypass list", "classes:\n  A: {tenant: {field: org, bypass: [admin]}}\n",
		"p.yaml:2: classes.A.tenant.bypass: want admin, or a mapping of rules {permission: write|admin, agents: [<profile names>]}"},
	{"allow_full_scan not a bool", "classes:\n  A:\n    allow_full_scan: sometimes\n",
		"p.yaml:3: classes.A.allow_full_scan: want true or false, not a string `sometimes`"},
	{"tenant internal", "classes:\n  A: {tenant: {field: _wperm}}\n",
		"p.yaml:2: classes.A.tenant.field: \"_wperm\" is an internal field; the policy may not name it"},
	{"method name", "methods:\n  Ticket: {update: {a: 1}}\n",
		"p.yaml:2: methods.Ticket: method names are \"Class.name\": a class name, a dot, then a letter followed by letters, digits or underscores"},
	{"method name bad class", "methods:\n  \"_x.y\": {update: {a: 1}}\n",
		"p.yaml:2: methods._x.y: method names are \"Class.name\": a class name, a dot, then a letter followed by letters, digits or underscores"},
	{"method empty", "methods:\n  T.m:\n",
		"p.yaml:2: methods.T.m: empty method: declare one of update, create or go"},
	{"method no action", "methods:\n  T.m: {description: d}\n",
		"p.yaml:2: methods.T.m: declare exactly one of update, create or go (found none)"},
	{"method two actions", "methods:\n  T.m: {update: {a: 1}, go: recalc}\n",
		"p.yaml:2: methods.T.m: declare exactly one of update, create or go (found update and go)"},
	{"method unknown go", "methods:\n  T.m: {go: nope}\n",
		"p.yaml:2: methods.T.m.go: no Go function \"nope\" (registered: recalc)"},
	{"method readonly update", "methods:\n  T.m: {permission: readonly, update: {a: 1}}\n",
		"p.yaml:2: methods.T.m.permission: an update method writes, so it needs permission write or admin"},
	{"method bad permission", "methods:\n  T.m: {permission: all, update: {a: 1}}\n",
		"p.yaml:2: methods.T.m.permission: unknown permission \"all\" (use readonly, write or admin)"},
	{"method update not instance", "methods:\n  T.m: {instance: false, update: {a: 1}}\n",
		"p.yaml:2: methods.T.m.instance: an update method changes one object, so it is an instance method (leave instance out or set it true)"},
	{"method create instance", "methods:\n  T.m: {instance: true, create: {a: 1}}\n",
		"p.yaml:2: methods.T.m.instance: a create method makes a new object, so it cannot be an instance method"},
	{"method parameters type", "methods:\n  T.m: {parameters: {type: array}, update: {a: 1}}\n",
		"p.yaml:2: methods.T.m.parameters: the parameters schema must have type: object"},
	{"method parameters not a mapping", "methods:\n  T.m: {parameters: [1], update: {a: 1}}\n",
		"p.yaml:2: methods.T.m.parameters: want a JSON schema of type object"},
	{"method parameters invalid", "methods:\n  T.m: {parameters: {type: object, properties: {x: {type: 5}}}, update: {a: 1}}\n",
		"p.yaml:2: methods.T.m.parameters: not a JSON schema: invalid value for \"type\": \"5\""},
	{"method arg unknown", "methods:\n  T.m:\n    parameters: {type: object, properties: {x: {type: string}}}\n    update: {a: {$arg: y}}\n",
		"p.yaml:4: methods.T.m.update.a.$arg: \"y\" is not a property of the method's parameters"},
	{"method arg nested unknown", "methods:\n  T.m:\n    create: {p: {__type: Pointer, className: U, objectId: {$arg: id}}}\n",
		"p.yaml:3: methods.T.m.create.p.objectId.$arg: \"id\" is not a property of the method's parameters"},
	{"method arg malformed", "methods:\n  T.m:\n    parameters: {type: object, properties: {x: {type: string}}}\n    update: {a: {$arg: x, b: 1}}\n",
		"p.yaml:4: methods.T.m.update.a: an argument reference is exactly {$arg: <parameter name>}"},
	{"method update objectId", "methods:\n  T.m: {update: {objectId: x}}\n",
		"p.yaml:2: methods.T.m.update.objectId: objectId is set by the store, not by a method"},
	{"method update internal", "methods:\n  T.m: {update: {_hashed_password: x}}\n",
		"p.yaml:2: methods.T.m.update._hashed_password: \"_hashed_password\" is an internal field; the policy may not name it"},
	{"method update empty", "methods:\n  T.m: {update: {}}\n",
		"p.yaml:2: methods.T.m.update: an update method must set at least one field"},
	{"method update not a mapping", "methods:\n  T.m: {update: [a]}\n",
		"p.yaml:2: methods.T.m.update: want a mapping of field names to values"},
	{"yaml syntax", "agents:\n  a: [\n",
		"p.yaml:2: did not find expected node content"},
	{"two documents", base + "---\nagents: {}\n",
		"p.yaml:4: a policy file holds one YAML document"},
	{"top level list", "- a\n",
		"p.yaml:1: the top level must be a mapping (settings, agents, classes, methods)"},
	{"duplicate key", "agents:\n  a:\n    identity: master\n  a:\n    identity: master\n",
		"p.yaml:4: agents.a: mapping key \"a\" already defined at line 2"},
	{"duplicate key in filter", base + "    filters: {T: {a: 1, a: 2}}\n",
		"p.yaml:4: agents.a.filters.T.a: key given twice"},
	{"profile not a mapping", "agents:\n  a: x\n",
		"p.yaml:2: agents.a: want an agent profile (a mapping), not a string `x`"},
	{"keys not a list", base + "    keys: x\n",
		"p.yaml:4: agents.a.keys: want a list of keys ({env: VAR}, {sha256: <hex>} or {key: <token>}), not a string `x`"},
	{"field meta not a mapping", "classes:\n  A:\n    fields:\n      s: text\n",
		"p.yaml:4: classes.A.fields.s: want field metadata ({description: ..., enum: [...]}), not a string `text`"},
	{"several errors", "agents:\n  a:\n    permission: root\n    identity: root\n",
		"p.yaml:3: agents.a.permission: unknown permission \"root\" (use readonly, write or admin)\np.yaml:4: agents.a.identity: want master, anonymous, session, token, {user: <objectId or username>}, {role: <name>} or {roles: [<names>]}, not \"root\""},
}

func TestLoadErrors(t *testing.T) {
	for _, c := range loadCases {
		t.Run(c.name, func(t *testing.T) {
			pol, err := Parse([]byte(c.yaml), testOptions())
			if err == nil {
				t.Fatalf("Parse succeeded (%d profiles); want error %q", len(pol.Agents), c.want)
			}
			if got := err.Error(); got != c.want {
				t.Errorf("error:\n got %q\nwant %q", got, c.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *policy.Error", err)
			}
		})
	}
}

func TestParseFull(t *testing.T) {
	src := `
settings:
  recursion_depth: 3
  default_agent: reader
agents:
  reader:
    identity: {role: Staff}
    tenant: T1
    keys: [{env: READER_KEY}, {sha256: "` + sha256hex("reader-2") + `"}]
    tools: [query_class, count_objects]
    classes: {except: [Order]}
    methods: {only: [close, "Ticket.reopen"], except: []}
    filters:
      Ticket: {archived: {$ne: true}}
      ":default": {org: {$exists: true}}
  helper:
    parent: reader
    tools: {except: [count_objects]}
    depth: 1
classes:
  Ticket:
    description: " A ticket. "
    hidden: false
    agent_fields: [title, status]
    join_fields: []
    large_fields: [title]
    fields:
      status: {description: State, enum: [open, {value: closed, description: Done}]}
    canonical_filter: {status: {$ne: spam}}
    tenant: {field: org, bypass: admin}
  Order:
    allow_full_scan: true
    tenant: {field: org, bypass: {permission: write}}
  Secret: {hidden: true}
  Vault: {hidden: always}
methods:
  Ticket.close: {description: Close it, update: {status: closed}, supports_dry_run: true}
  Ticket.reopen: {description: Reopen, permission: admin, update: {status: open}}
  Ticket.open_new:
    description: New ticket
    parameters: {type: object, properties: {title: {type: string}}, required: [title]}
    create: {title: {$arg: title}, status: open}
  Project.recalc: {description: Recompute, go: recalc, instance: true, destructive: true}
`
	opts := testOptions()
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "READER_KEY" {
			return "reader-1", true
		}
		return "", false
	}
	pol, err := Parse([]byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Warnings) != 0 {
		t.Errorf("warnings: %q", pol.Warnings)
	}
	wantSettings := Settings{RecursionDepth: 3, DefaultAgent: "reader"}
	if pol.Settings != wantSettings {
		t.Errorf("settings = %+v, want %+v", pol.Settings, wantSettings)
	}
	keyCmp := cmp.Comparer(func(a, b Key) bool {
		return a.Source == b.Source && a.Env == b.Env && a.usable == b.usable && a.digest == b.digest
	})
	wantReader := &Profile{
		Name: "reader", Permission: agent.Readonly,
		Identity: IdentitySpec{Kind: IdentityRoles, Roles: []string{"Staff"}},
		Keys: []Key{
			{Source: "env", Env: "READER_KEY", digest: sha256.Sum256([]byte("reader-1")), usable: true},
			{Source: "sha256", digest: sha256.Sum256([]byte("reader-2")), usable: true},
		},
		Tenant:  "T1",
		Tools:   agent.NameFilter{Only: []string{"query_class", "count_objects"}},
		Classes: agent.NameFilter{Except: []string{"Order"}},
		Methods: agent.NameFilter{Only: []string{"close", "Ticket.reopen"}, Except: []string{}},
		Filters: agent.ClassFilters{
			"Ticket":   {"archived": map[string]any{"$ne": true}},
			":default": {"org": map[string]any{"$exists": true}},
		},
	}
	if diff := cmp.Diff(wantReader, pol.Agents["reader"], keyCmp); diff != "" {
		t.Errorf("reader (-want +got):\n%s", diff)
	}
	wantHelper := &Profile{Name: "helper", Parent: "reader", Tools: agent.NameFilter{Except: []string{"count_objects"}}, Depth: 1}
	if diff := cmp.Diff(wantHelper, pol.Agents["helper"], keyCmp); diff != "" {
		t.Errorf("helper (-want +got):\n%s", diff)
	}

	wantClasses := map[string]*agent.ClassMeta{
		"Ticket": {
			Description: "A ticket.",
			AgentFields: []string{"title", "status"}, JoinFields: []string{}, LargeFields: []string{"title"},
			Fields:          map[string]*agent.FieldMeta{"status": {Description: "State", Enum: []agent.EnumValue{{Value: "open"}, {Value: "closed", Description: "Done"}}}},
			CanonicalFilter: map[string]any{"status": map[string]any{"$ne": "spam"}},
			Tenant:          &agent.TenantScope{Field: "org", Bypass: agent.TenantBypass{Permission: ptr(agent.Admin)}},
		},
		"Order":  {AllowFullScan: true, Tenant: &agent.TenantScope{Field: "org", Bypass: agent.TenantBypass{Permission: ptr(agent.Write)}}},
		"Secret": {Hidden: agent.HiddenExceptMaster},
		"Vault":  {Hidden: agent.HiddenAlways},
	}
	if diff := cmp.Diff(wantClasses, pol.Catalog.Classes); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}

	type methodSummary struct {
		Class, Name, Description, Kind, FuncName string
		Permission                               agent.Permission
		Instance, SupportsDryRun, Destructive    bool
		Set                                      map[string]any
		HasFunc                                  bool
		Required                                 []string
	}
	got := map[string]methodSummary{}
	for k, m := range pol.Catalog.Methods {
		if m.Parameters == nil || m.Resolved == nil || m.Parameters.Type != "object" {
			t.Errorf("%s: parameters %v, resolved %v", k, m.Parameters, m.Resolved)
		}
		got[k] = methodSummary{m.Class, m.Name, m.Description, m.Kind, m.FuncName, m.Permission, m.Instance, m.SupportsDryRun, m.Destructive, m.Set, m.Func != nil, m.Parameters.Required}
	}
	want := map[string]methodSummary{
		"Ticket.close":    {"Ticket", "close", "Close it", agent.MethodUpdate, "", agent.Write, true, true, false, map[string]any{"status": "closed"}, false, nil},
		"Ticket.reopen":   {"Ticket", "reopen", "Reopen", agent.MethodUpdate, "", agent.Admin, true, false, false, map[string]any{"status": "open"}, false, nil},
		"Ticket.open_new": {"Ticket", "open_new", "New ticket", agent.MethodCreate, "", agent.Write, false, false, false, map[string]any{"title": map[string]any{"$arg": "title"}, "status": "open"}, false, []string{"title"}},
		"Project.recalc":  {"Project", "recalc", "Recompute", agent.MethodGo, "recalc", agent.Readonly, true, false, true, nil, true, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("methods (-want +got):\n%s", diff)
	}
	// A method without parameters accepts no arguments.
	if err := pol.Catalog.Methods["Ticket.close"].Resolved.Validate(map[string]any{"x": 1.0}); err == nil {
		t.Error("Ticket.close accepted an undeclared argument")
	}
	if err := pol.Catalog.Methods["Ticket.open_new"].Resolved.Validate(map[string]any{}); err == nil {
		t.Error("Ticket.open_new accepted a call without its required title")
	}
}

func TestEmptyPolicy(t *testing.T) {
	for _, src := range []string{"", "# nothing\n", "null\n"} {
		pol, err := Parse([]byte(src), testOptions())
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if len(pol.Agents) != 0 || len(pol.Catalog.Classes) != 0 || pol.RecursionDepth != agent.DefaultRecursionDepth {
			t.Errorf("%q: got %+v", src, pol)
		}
	}
}

// Bypass rules: names of profiles, and a warning for a profile they name
// but never let through (audit-helper on Ticket passes: its parent is
// named too; ops-helper's parent is covered by the tier).
func TestTenantBypassRules(t *testing.T) {
	src := `agents:
  ops: {identity: master, permission: admin}
  audit: {identity: master}
  audit-helper: {parent: audit}
  ops-helper: {parent: ops}
  clerk-helper: {parent: clerk}
  clerk: {identity: master, tenant: T1}
classes:
  Ticket:
    tenant:
      field: org
      bypass:
        permission: admin
        agents: [audit, audit-helper, ops-helper, clerk-helper]
  Project:
    tenant: {field: org, bypass: {agents: [audit-helper]}}
`
	pol, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := agent.TenantBypass{Permission: ptr(agent.Admin), Agents: []string{"audit", "audit-helper", "ops-helper", "clerk-helper"}}
	if d := cmp.Diff(want, pol.Catalog.Classes["Ticket"].Tenant.Bypass); d != "" {
		t.Errorf("Ticket's rules (-want +got):\n%s", d)
	}
	wantWarnings := []string{
		`p.yaml:14: classes.Ticket.tenant.bypass.agents[3]: profile "clerk-helper" is bound to tenant "T1", and a binding is never bypassed`,
		`p.yaml:16: classes.Project.tenant.bypass.agents[0]: sub-agent profile "audit-helper" never bypasses: no rule covers its parent "audit"`,
	}
	if d := cmp.Diff(wantWarnings, pol.Warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

func TestWarnings(t *testing.T) {
	src := `agents:
  a:
    identity: master
    keys: [{key: plain-text}, {env: MISSING_KEY}]
    tools: [query_clas]
    methods: [nope, "Ticket.close"]
classes:
  Ticket:
    agent_fields: [title]
    large_fields: [body]
    fields: {status: {description: s}}
methods:
  Ticket.close: {update: {status: closed}}
`
	pol, err := Parse([]byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`p.yaml:4: agents.a.keys[0].key: a literal key is readable by anyone who can read this file; prefer env or sha256`,
		`p.yaml:4: agents.a.keys[1].env: environment variable MISSING_KEY is unset or empty; this key matches no token`,
		`p.yaml:5: agents.a.tools[0]: unknown tool "query_clas"`,
		`p.yaml:6: agents.a.methods[0]: no declared method matches "nope"`,
		`p.yaml:10: classes.Ticket.large_fields: "body" is not in agent_fields, so agents never see it anyway`,
		`p.yaml:11: classes.Ticket.fields.status: not in agent_fields, so agents never see this field`,
		`p.yaml:13: methods.Ticket.close: no description: agents see the method without an explanation`,
	}
	if diff := cmp.Diff(want, pol.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if k := pol.Agents["a"].Keys[1]; k.Usable() || k.String() != "env MISSING_KEY" {
		t.Errorf("env key: usable %v, %s", k.Usable(), k)
	}
	// Remote agents' tools and prefixes of known tools pass a strict tool
	// filter: remote agents come and go, so only the form is checked.
	pol, err = Parse([]byte("settings: {strict_tool_filter: true}\nagents:\n  a: {identity: master, tools: {only: [query_*, device-d1__read_sensor, mcp-everything__*, sensor-*], except: [device-d2__*, sensor-x*]}}\n"), testOptions())
	if err != nil || len(pol.Warnings) != 0 {
		t.Errorf("remote tool entries: err %v, warnings %q", err, pol.Warnings)
	} else if f := pol.Agents["a"].Tools; !f.Allows("query_class") || !f.Allows("mcp-everything__echo") || f.Allows("device-d2__ping") || f.Allows("count_objects") ||
		!f.Allows("sensor-probe__read") || f.Allows("sensor-x1__read") {
		t.Errorf("remote tool entries: %+v", f)
	}
	// Without KnownTools, tool names are not checked at all.
	opts := testOptions()
	opts.KnownTools = nil
	pol, err = Parse([]byte("settings: {strict_tool_filter: true}\nagents:\n  a: {identity: master, tools: [anything]}\n"), opts)
	if err != nil || len(pol.Warnings) != 0 {
		t.Errorf("no KnownTools: err %v, warnings %q", err, pol.Warnings)
	}
}

func TestSelect(t *testing.T) {
	src := `settings: {default_agent: guest}
agents:
  guest: {identity: anonymous}
  ops:
    identity: master
    keys: [{sha256: "` + strings.ToUpper(sha256hex("ops-token")) + `"}, {env: OPS_KEY}]
  bot:
    identity: master
    keys: [{key: bot-token}, {env: UNSET_KEY}]
`
	opts := testOptions()
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "OPS_KEY" {
			return "ops-env-token", true
		}
		return "", false
	}
	pol, err := Parse([]byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, c := range []struct {
		name    string
		header  http.Header
		want    string
		wantErr string
	}{
		{"sha256 key", hdr("Authorization", "Bearer ops-token"), "ops", ""},
		{"env key", hdr("Authorization", "Bearer ops-env-token"), "ops", ""},
		{"literal key, lower-case scheme", hdr("Authorization", "bearer bot-token"), "bot", ""},
		{"no token: default agent", hdr(), "guest", ""},
		{"nil header: default agent", nil, "guest", ""},
		{"wrong token", hdr("Authorization", "Bearer ops-token2"), "", "unauthorized: unknown bearer token"},
		{"empty token", hdr("Authorization", "Bearer "), "", "unauthorized: the Authorization header is not a bearer token"},
		{"basic auth", hdr("Authorization", "Basic b3BzOnRva2Vu"), "", "unauthorized: the Authorization header is not a bearer token"},
		{"a real key under another scheme", hdr("Authorization", "Token bot-token"), "", "unauthorized: the Authorization header is not a bearer token"},
		{"a real key without a scheme", hdr("Authorization", "bot-token"), "", "unauthorized: the Authorization header is not a bearer token"},
		{"a real key in another header", hdr("X-MCP-API-Key", "bot-token"), "guest", ""},
		{"huge token", hdr("Authorization", "Bearer "+strings.Repeat("x", 5000)), "", "unauthorized: unknown bearer token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := pol.Select(c.header)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr || !errors.Is(err, agent.ErrUnauthorized) {
					t.Fatalf("Select = %q, %v; want error %q wrapping ErrUnauthorized", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Select = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	// Without a default agent, a request without a token is refused.
	pol.DefaultAgent = ""
	if _, err := pol.Select(hdr()); err == nil || !errors.Is(err, agent.ErrUnauthorized) ||
		err.Error() != "unauthorized: no bearer token, and the policy has no default_agent" {
		t.Errorf("no default: %v", err)
	}
	// The errors never echo the token.
	_, err = pol.Select(hdr("Authorization", "Bearer secret-value-123"))
	if strings.Contains(err.Error(), "secret-value-123") {
		t.Errorf("error echoes the token: %v", err)
	}
}
