package prompts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// Limits of the built-in prompts' arguments.
const (
	DefaultRecentLimit = 10
	MaxRecentLimit     = 100
	// maxListedClasses bounds the class list explore_database spells out.
	maxListedClasses = 200
)

// Builtin returns the eight built-in prompts, sorted by name.
func Builtin() []Prompt {
	return []Prompt{
		classOverview(),
		countBy(),
		createdInRange(),
		exploreDatabase(),
		findRelationship(),
		parseConventions(),
		parseRelations(),
		recentActivity(),
	}
}

func classArg(desc string) Arg {
	return Arg{Name: "class_name", Description: desc, Required: true}
}

// ---- parse_conventions ------------------------------------------------------

func parseConventions() Prompt {
	return Prompt{
		Name:        "parse_conventions",
		Description: "Explain how Parse data is shaped and queried here (ids, dates, __type values, system classes, ACLs, where-constraints, limits); read it once and keep it in context.",
		Render: func(context.Context, Env, map[string]string) (Rendered, error) {
			return Rendered{Description: "Parse data conventions and the where-language of this server.", Text: conventionsText}, nil
		},
	}
}

const conventionsText = "You are reading a Parse application's data through tools that show only the classes, fields and objects you are allowed to see. These are the conventions that data follows.\n\n" +
	`## Classes and objects
- A class is like a table and an object like a row. Class and field names are case-sensitive; take them from get_all_schemas or get_schema, never guess them.
- Classes whose name starts with "_" are built into Parse; every other class belongs to the application.
- Every object has these fields:
  - objectId: a string id, usually 10 letters and digits (e.g. "xWMyZ4YEGZ"); imported data may have longer ones. It is unique only within its class.
  - createdAt, updatedAt: ISO-8601 timestamps in UTC with milliseconds, e.g. "2024-03-05T14:07:00.000Z". Results give these two as plain strings.
  - ACL: who may read and write the object (see Access control).

## Typed values ("__type")
Values that are not plain strings, numbers, booleans, arrays or objects are JSON objects with a "__type" key:
- Date:     {"__type":"Date","iso":"2024-01-31T00:00:00.000Z"}
- Pointer:  {"__type":"Pointer","className":"Project","objectId":"aBcD123456"}  (a reference to one object of another class)
- Relation: declared in the schema only; a many-to-many link kept outside the object, never returned inline.
- File:     {"__type":"File","name":"report.pdf","url":"https://…"}
- GeoPoint: {"__type":"GeoPoint","latitude":48.85,"longitude":2.35}
- Polygon:  {"__type":"Polygon","coordinates":[[48.8,2.3],[48.9,2.3],[48.9,2.4]]}
- Bytes:    {"__type":"Bytes","base64":"SGVsbG8="}
A pointer fetched with include comes back as the whole object, marked "__type":"Object" with its "className".

## Built-in classes
- _User: accounts (username, email, emailVerified, authData). Password hashes are never exposed, and email or authData are often protected.
- _Role: named groups of users. Its "users" field is a Relation to _User, and "roles" a Relation to _Role (members of a child role inherit the parent role's access).
- _Session: login sessions (user, sessionToken, expiresAt); normally readable only with the master key.

## Access control
- An object's ACL maps "*" (everyone), a user's objectId or "role:Name" to rights, e.g. {"*":{"read":true},"role:Admin":{"read":true,"write":true}}. An object without an ACL is public.
- In storage the ACL becomes two arrays: _rperm lists who may read the object, _wperm who may write it.
- Class-level permissions decide per class who may find, get, count, create, update or delete, and protectedFields hide fields from some users.
- Everything you get is already filtered by these rules: counts and queries cover only the objects you may read, and an object you may not read is reported as not found. Say so when you report numbers ("N objects visible to this agent").

## Where-constraints (the "where" of query_class and count_objects)
- Equality:      {"status":"open"}        (several keys in one object must all match)
- Not equal:     {"status":{"$ne":"closed"}}
- Comparisons:   {"total":{"$gte":100,"$lt":500}}   ($lt $lte $gt $gte on numbers, strings and dates)
- Dates:         {"createdAt":{"$gte":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"}}}
- One of:        {"status":{"$in":["open","pending"]}}   (none of: $nin)
- Set or not:    {"dueDate":{"$exists":true}}
- Pattern:       {"title":{"$regex":"^urgent","$options":"i"}}   (String fields; options i, m, s; anchored prefixes are cheapest)
- Pointer:       {"project":{"__type":"Pointer","className":"Project","objectId":"aBcD123456"}}, or just the objectId "aBcD123456"
- Full text:     {"title":{"$text":{"$search":{"$term":"slow & load"}}}}   (String fields; by stem, any case; & | ! <-> 'a phrase')
- Array holds:   {"tags":"urgent"}   (all of several: {"tags":{"$all":["urgent","bug"]}})
- Inside Object: {"address.city":"Paris"}   (dotted paths reach only into Object fields, not through pointers)
- Or:            {"$or":[{"status":"open"},{"priority":{"$gte":3}}]}   ($and and $nor work the same way)
Not supported by this server yet: $relatedTo, $inQuery, $notInQuery, $select, $dontSelect and geo queries. To filter by a pointed-to object's fields, query that class first for the matching objectIds, then use {"field":{"$in":[…ids…]}}.

## Shaping results
- limit: rows per query_class call, default 100, at most 1000. When more rows match, the result's next_call holds the exact arguments of the next page (or page with skip, keeping a fixed order).
- order: comma-separated fields, "-" for descending: "-createdAt,title".
- keys: return only these fields, e.g. ["title","status"] (objectId, createdAt and updatedAt always come back).
- include: pointer fields to fetch inline, one level deep, e.g. ["project","owner"].
- get_object fetches one object by class_name and object_id; get_objects fetches up to 50 ids at once; get_sample_objects returns a few recent objects (limit 1 to 20, default 5).
- count_objects is cheap: size a class or a where-constraint before fetching rows, and prefer counts over downloading everything.

## Tools
- Start with get_all_schemas (narrow it with {"prefix":"…"} or {"names":[…]}) and get_schema {"class_name":"…"} for one class's fields, pointer targets and indexes.
- list_tools {"category":"aggregate"} (or another category) shows which further tools this server offers.
`

// ---- explore_database -------------------------------------------------------

func exploreDatabase() Prompt {
	return Prompt{
		Name:        "explore_database",
		Description: "Survey every class you can see: list them, count each one and summarize what each appears to store.",
		Render: func(ctx context.Context, env Env, _ map[string]string) (Rendered, error) {
			c, err := loadCatalog(ctx, env)
			if err != nil {
				return Rendered{}, err
			}
			var b strings.Builder
			b.WriteString("Survey this Parse database and explain what it holds.\n\n")
			switch n := len(c.names); {
			case n == 0:
				b.WriteString("You cannot see any classes right now. Confirm with get_all_schemas {}; if it lists none either, report that there is nothing this agent may read, and stop.\n\n")
			case n <= maxListedClasses:
				fmt.Fprintf(&b, "You can see %d classes: %s.\n\n", n, strings.Join(c.names, ", "))
			default:
				fmt.Fprintf(&b, "You can see %d classes; the first %d by name are: %s, …\n\n", n, maxListedClasses, strings.Join(c.names[:maxListedClasses], ", "))
			}
			b.WriteString(`Steps:
1. Call get_all_schemas {} once for every class's fields and types. If the answer is too large, fetch it in parts with {"prefix":"…"} or {"names":[…]}.
2. For each class, call count_objects {"class_name":"<class>"} to learn its size.
3. For each class with at least one object, call get_sample_objects {"class_name":"<class>","limit":3} to see real values. With more than 30 classes, sample only the 10 largest application classes (names not starting with "_").
4. Work out how the classes connect from their Pointer and Relation fields (the parse_relations prompt draws them as a diagram).

Report:
- A table with one row per class: class | objects | what it appears to store (one line, inferred from field names and sample values).
- The main entities and how they link, e.g. "Ticket.project → Project".
- Observations: empty classes, classes that look like logs or join tables, fields that are mostly unset, and how recent the newest objects are (their createdAt).
Counts include only objects you may read; say so. Mark inferred purposes with "appears to", and never mention a class or field that the tools did not return.
`)
			return Rendered{Description: "Survey of the classes visible to this agent.", Text: b.String()}, nil
		},
	}
}

// ---- class_overview ---------------------------------------------------------

func classOverview() Prompt {
	return Prompt{
		Name:        "class_overview",
		Description: "Describe one class in detail: its fields and types, how many objects it has, their time span and sample objects.",
		Args:        []Arg{classArg("The class to describe, e.g. Ticket or _User.")},
		Render: func(ctx context.Context, env Env, raw map[string]string) (Rendered, error) {
			v, err := args(raw).require("class_name")
			if err != nil {
				return Rendered{}, err
			}
			s, err := catalogClass(ctx, env, "class_name", v[0])
			if err != nil {
				return Rendered{}, err
			}
			cls := s.ClassName
			oneDate := func(order string) string {
				return call("query_class", map[string]any{"class_name": cls, "order": order, "limit": 1, "keys": []string{"createdAt"}})
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Give a detailed overview of the Parse class %s.\n\nSteps:\n", cls)
			fmt.Fprintf(&b, "1. %s: every field with its type, whether it is required, pointer and relation targets, and indexes.\n", call("get_schema", map[string]any{"class_name": cls}))
			fmt.Fprintf(&b, "2. %s: how many objects you can read.\n", call("count_objects", map[string]any{"class_name": cls}))
			fmt.Fprintf(&b, "3. %s: what real values look like.\n", call("get_sample_objects", map[string]any{"class_name": cls, "limit": 5}))
			fmt.Fprintf(&b, "4. Time span: %s gives the oldest object and %s the newest.\n", oneDate("createdAt"), oneDate("-createdAt"))
			fmt.Fprintf(&b, "5. For up to 5 fields that look important, measure how often they are set: %s.\n", call("count_objects", map[string]any{"class_name": cls, "where": map[string]any{"<field>": map[string]any{"$exists": true}}}))
			if ptrs := pointerFields(s); len(ptrs) > 0 {
				links := make([]string, len(ptrs))
				for i, p := range ptrs {
					links[i] = p + " → " + s.Fields[p].TargetClass
				}
				fmt.Fprintf(&b, "\nPointer fields: %s. To see the objects they point to, add %s to query_class or get_object.\n", strings.Join(links, ", "), js(map[string]any{"include": ptrs}))
			}
			b.WriteString(`
Report:
- What the class appears to represent, in one or two sentences.
- A field table: field | type | notes (example values, how often it is set, pointer target).
- Size and time span (oldest and newest createdAt).
- How it links to other classes.
- Anything unusual: fields that are almost never set, inconsistent values, surprising gaps.
Counts cover only objects you may read; say so.
`)
			return Rendered{Description: "Overview of the class " + cls + ".", Text: b.String()}, nil
		},
	}
}

// ---- count_by ---------------------------------------------------------------

func countBy() Prompt {
	return Prompt{
		Name:        "count_by",
		Description: "Count a class's objects grouped by the values of one of its fields.",
		Args: []Arg{
			classArg("The class whose objects to count."),
			{Name: "group_by", Description: "The field to group by, e.g. status (a String, Number, Boolean, Date, Pointer or Array field).", Required: true},
		},
		Render: func(ctx context.Context, env Env, raw map[string]string) (Rendered, error) {
			v, err := args(raw).require("class_name", "group_by")
			if err != nil {
				return Rendered{}, err
			}
			s, err := catalogClass(ctx, env, "class_name", v[0])
			if err != nil {
				return Rendered{}, err
			}
			fname := v[1]
			f, err := field("group_by", s, fname)
			if err != nil {
				return Rendered{}, err
			}
			switch f.Type {
			case parse.TypeString, parse.TypeNumber, parse.TypeBoolean, parse.TypeDate, parse.TypePointer, parse.TypeArray:
			default:
				return Rendered{}, argErr("group_by", "cannot group by %s.%s: it is a %s field; pick a String, Number, Boolean, Date, Pointer or Array field", s.ClassName, fname, f.Type)
			}
			cls := s.ClassName
			where := func(w any) string {
				return call("count_objects", map[string]any{"class_name": cls, "where": map[string]any{fname: w}})
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Count the objects of the Parse class %s grouped by the value of its %s field %s.\n\nSteps:\n", cls, f.Type, fname)
			fmt.Fprintf(&b, "1. %s: the total, to check the breakdown against.\n", call("count_objects", map[string]any{"class_name": cls}))
			groupArgs := map[string]any{"class_name": cls, "field": fname, "operation": "count"}
			if f.Type == parse.TypeArray {
				groupArgs["flatten_arrays"] = true // by element, as step 3 counts
			}
			fmt.Fprintf(&b, "2. Call list_tools {\"category\":\"aggregate\"}. If it lists group_by, call %s, use its answer and go to step 4.\n", call("group_by", groupArgs))
			b.WriteString("3. Otherwise count each group with count_objects:\n")
			order := fname
			if f.Type == parse.TypeArray {
				order = parse.FieldObjectID // arrays cannot be sorted on
			}
			listValues := call("query_class", map[string]any{"class_name": cls, "keys": []string{fname}, "order": order, "limit": 1000})
			findValues := fmt.Sprintf("   - Find the distinct values: %s, following next_call for further pages. If the class has at most 5000 objects you can tally the groups from these rows directly; otherwise read the first few pages to find the values, then count each one exactly.\n", listValues)
			switch f.Type {
			case parse.TypeBoolean:
				fmt.Fprintf(&b, "   - %s and %s.\n", where(true), where(false))
			case parse.TypeDate:
				oldest := call("query_class", map[string]any{"class_name": cls, "order": fname, "limit": 1, "keys": []string{fname}, "where": map[string]any{fname: map[string]any{"$exists": true}}})
				fmt.Fprintf(&b, "   - Exact timestamps rarely repeat, so group by period. Find the earliest value with %s (and the latest with order \"-%s\").\n", oldest, fname)
				fmt.Fprintf(&b, "   - Pick periods that give at most 24 groups (days, weeks, months or years) and count each: %s.\n",
					call("count_objects", map[string]any{"class_name": cls, "where": map[string]any{fname: map[string]any{
						"$gte": map[string]any{"__type": "Date", "iso": "<period start>"}, "$lt": map[string]any{"__type": "Date", "iso": "<period end>"},
					}}}))
			case parse.TypePointer:
				b.WriteString(findValues)
				fmt.Fprintf(&b, "   - Count each target object: %s.\n", where(pointerValue(f.TargetClass, "<objectId>")))
				fmt.Fprintf(&b, "   - Label the groups with a readable field (a name or title) of the %s objects: get_objects {\"class_name\":%q,\"ids\":[…up to 50 ids…]}.\n", f.TargetClass, f.TargetClass)
			case parse.TypeArray:
				b.WriteString(findValues)
				fmt.Fprintf(&b, "   - Group by element: an object whose %s holds several values counts once for each. Count an element with %s; the groups may add up to more than the total.\n", fname, where("<element>"))
			case parse.TypeNumber:
				b.WriteString(findValues)
				fmt.Fprintf(&b, "   - Count each value with %s. If there are more than 30 distinct values, group them into ranges instead: %s.\n", where("<<value>>"), where(map[string]any{"$gte": "<<low>>", "$lt": "<<high>>"}))
			default: // String
				b.WriteString(findValues)
				fmt.Fprintf(&b, "   - Count each value with %s.\n", where("<value>"))
			}
			if f.Type != parse.TypeBoolean && f.Type != parse.TypeDate {
				b.WriteString("   - With more than 30 groups, report the 20 largest and put the rest in an \"other\" row.\n")
			}
			fmt.Fprintf(&b, "   - Count the objects where %s is not set: %s.\n", fname, where(map[string]any{"$exists": false}))
			fmt.Fprintf(&b, `4. Report a table: %s | count | %% of total, largest first, with a "(not set)" row. State the total, and whether the groups add up to it. Counts cover only objects you may read.
`, fname)
			return Rendered{Description: fmt.Sprintf("Objects of %s counted by %s.", cls, fname), Text: b.String()}, nil
		},
	}
}

// ---- recent_activity --------------------------------------------------------

func recentActivity() Prompt {
	return Prompt{
		Name:        "recent_activity",
		Description: "Show the most recently created objects of a class and how busy it has been lately.",
		Args: []Arg{
			classArg("The class to look at."),
			{Name: "limit", Description: fmt.Sprintf("How many recent objects to show, 1 to %d (default %d).", MaxRecentLimit, DefaultRecentLimit)},
		},
		Render: func(ctx context.Context, env Env, raw map[string]string) (Rendered, error) {
			a := args(raw)
			v, err := a.require("class_name")
			if err != nil {
				return Rendered{}, err
			}
			limit, err := parseLimit(a, "limit", DefaultRecentLimit, 1, MaxRecentLimit)
			if err != nil {
				return Rendered{}, err
			}
			s, err := catalogClass(ctx, env, "class_name", v[0])
			if err != nil {
				return Rendered{}, err
			}
			cls := s.ClassName
			t := now().UTC().Truncate(time.Second)
			since := func(d time.Duration) string {
				return call("count_objects", map[string]any{"class_name": cls, "where": map[string]any{"createdAt": map[string]any{"$gte": dateValue(t.Add(-d))}}})
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Show the %d most recently created objects of the Parse class %s and describe the recent activity. The time now is %s.\n\nSteps:\n", limit, cls, parse.FormatDate(t))
			fmt.Fprintf(&b, "1. %s: the newest objects first.", call("query_class", map[string]any{"class_name": cls, "order": "-createdAt", "limit": limit}))
			if ptrs := pointerFields(s); len(ptrs) > 0 {
				fmt.Fprintf(&b, " If a pointer (%s) needs a readable label, add %s for that field.", strings.Join(ptrs, ", "), js(map[string]any{"include": []string{"<field>"}}))
			}
			b.WriteString("\n")
			fmt.Fprintf(&b, "2. The pace of creation: %s for the last 24 hours and %s for the last 7 days.\n", since(24*time.Hour), since(7*24*time.Hour))
			fmt.Fprintf(&b, "3. Optionally, %s shows older objects that changed recently.\n", call("query_class", map[string]any{"class_name": cls, "order": "-updatedAt", "limit": limit}))
			b.WriteString(`
Report:
- The objects, newest first: objectId, createdAt and the few fields that best describe each (a name, title, status or owner).
- Patterns: who or what creates them, which values dominate, bursts or quiet periods.
- The counts for the last 24 hours and 7 days. If there are none, say when the newest object was created.
Counts cover only objects you may read; say so.
`)
			return Rendered{Description: fmt.Sprintf("The %d most recent objects of %s.", limit, cls), Text: b.String()}, nil
		},
	}
}

// ---- find_relationship ------------------------------------------------------

func findRelationship() Prompt {
	return Prompt{
		Name:        "find_relationship",
		Description: "Find the objects of one class that point to a given object of another class through a pointer field.",
		Args: []Arg{
			{Name: "parent_class", Description: "The class of the object pointed to, e.g. Project.", Required: true},
			{Name: "parent_id", Description: "The objectId of that object.", Required: true},
			{Name: "child_class", Description: "The class whose objects point to it, e.g. Ticket.", Required: true},
			{Name: "pointer_field", Description: "The Pointer field of child_class that points to parent_class, e.g. project.", Required: true},
		},
		Render: func(ctx context.Context, env Env, raw map[string]string) (Rendered, error) {
			v, err := args(raw).require("parent_class", "parent_id", "child_class", "pointer_field")
			if err != nil {
				return Rendered{}, err
			}
			id, fname := v[1], v[3]
			if !parse.ValidObjectID(id) {
				return Rendered{}, argErr("parent_id", "%q is not an objectId (letters and digits only)", id)
			}
			c, err := loadCatalog(ctx, env)
			if err != nil {
				return Rendered{}, err
			}
			parent, err := c.class("parent_class", v[0])
			if err != nil {
				return Rendered{}, err
			}
			child, err := c.class("child_class", v[2])
			if err != nil {
				return Rendered{}, err
			}
			f, err := field("pointer_field", child, fname)
			if err != nil {
				return Rendered{}, err
			}
			if f.Type != parse.TypePointer {
				return Rendered{}, argErr("pointer_field", "%s.%s is a %s field, not a Pointer", child.ClassName, fname, f.Type)
			}
			if f.TargetClass != parent.ClassName {
				// The target is visible (the catalog drops the others), so
				// naming it reveals nothing.
				return Rendered{}, argErr("pointer_field", "%s.%s points to %s, not %s", child.ClassName, fname, f.TargetClass, parent.ClassName)
			}
			p, ch := parent.ClassName, child.ClassName
			where := map[string]any{fname: pointerValue(p, id)}
			var b strings.Builder
			fmt.Fprintf(&b, "Find the %s objects whose %s field points to the %s object %s.\n\nSteps:\n", ch, fname, p, id)
			fmt.Fprintf(&b, "1. %s: confirm the %s object exists. If it is not found (it may not exist, or you may not be allowed to read it), say so and stop.\n", call("get_object", map[string]any{"class_name": p, "object_id": id}), p)
			fmt.Fprintf(&b, "2. %s: how many %s objects point to it.\n", call("count_objects", map[string]any{"class_name": ch, "where": where}), ch)
			fmt.Fprintf(&b, "3. %s: the most recent of them. If there are more, say how many more; fetch further pages (next_call) only if asked.\n", call("query_class", map[string]any{"class_name": ch, "where": where, "order": "-createdAt", "limit": 20}))
			fmt.Fprintf(&b, "4. If %s has a status-like field, break the count down by adding that field to the where-constraint, e.g. %s.\n", ch, js(map[string]any{fname: pointerValue(p, id), "<field>": "<value>"}))
			var others []string
			for _, n := range pointerFields(child) {
				if n != fname && child.Fields[n].TargetClass == p {
					others = append(others, n)
				}
			}
			if len(others) > 0 {
				fmt.Fprintf(&b, "\nOther fields of %s also point to %s: %s. Mention them if the question may concern those links instead.\n", ch, p, strings.Join(others, ", "))
			}
			fmt.Fprintf(&b, `
Report:
- The %s object in a line or two.
- How many %s objects point to it through %s, and a table of the most recent ones with their most descriptive fields.
- Notable patterns (statuses, owners, dates).
Counts cover only objects you may read; say so.
`, p, ch, fname)
			return Rendered{Description: fmt.Sprintf("%s objects linked to %s %s through %s.", ch, p, id, fname), Text: b.String()}, nil
		},
	}
}

// ---- created_in_range -------------------------------------------------------

func createdInRange() Prompt {
	return Prompt{
		Name:        "created_in_range",
		Description: "Count and sample the objects of a class created within a date range.",
		Args: []Arg{
			classArg("The class to look at."),
			{Name: "since", Description: "Start of the range, inclusive: an ISO-8601 date (2024-01-31, midnight UTC) or date-time (2024-01-31T09:30:00Z).", Required: true},
			{Name: "until", Description: "End of the range, exclusive, in the same format; must be after since. Default: now."},
		},
		Render: func(ctx context.Context, env Env, raw map[string]string) (Rendered, error) {
			a := args(raw)
			v, err := a.require("class_name", "since")
			if err != nil {
				return Rendered{}, err
			}
			since, err := parseDateArg("since", v[1])
			if err != nil {
				return Rendered{}, err
			}
			var until time.Time
			if u := a.get("until"); u != "" {
				if until, err = parseDateArg("until", u); err != nil {
					return Rendered{}, err
				}
				if !until.After(since) {
					return Rendered{}, argErr("until", "must be after since (%s), got %s", parse.FormatDate(since), parse.FormatDate(until))
				}
			}
			s, err := catalogClass(ctx, env, "class_name", v[0])
			if err != nil {
				return Rendered{}, err
			}
			cls := s.ClassName
			rng := map[string]any{"$gte": dateValue(since)}
			span := "from " + parse.FormatDate(since) + " (inclusive) until now"
			if !until.IsZero() {
				rng["$lt"] = dateValue(until)
				span = "from " + parse.FormatDate(since) + " (inclusive) to " + parse.FormatDate(until) + " (exclusive)"
			}
			where := map[string]any{"createdAt": rng}
			var b strings.Builder
			fmt.Fprintf(&b, "Count and sample the objects of the Parse class %s created %s.\n\nSteps:\n", cls, span)
			fmt.Fprintf(&b, "1. %s: how many were created in the range.\n", call("count_objects", map[string]any{"class_name": cls, "where": where}))
			fmt.Fprintf(&b, "2. %s: the total, to give the range's share.\n", call("count_objects", map[string]any{"class_name": cls}))
			fmt.Fprintf(&b, "3. %s: the latest objects in the range (use order \"createdAt\" for the earliest).\n", call("query_class", map[string]any{"class_name": cls, "where": where, "order": "-createdAt", "limit": 10}))
			b.WriteString("4. If the range spans more than two days, split it into at most 12 equal periods (days, weeks or months) and count each with count_objects, using \"$gte\" the period's start and \"$lt\" its end on createdAt, to show the trend.\n")
			b.WriteString(`
Report:
- How many objects were created in the range, and their share of the total.
- The trend across the periods, if you split the range.
- The sample, with the fields that best describe each object.
Counts cover only objects you may read; say so.
`)
			return Rendered{Description: fmt.Sprintf("Objects of %s created %s.", cls, span), Text: b.String()}, nil
		},
	}
}
