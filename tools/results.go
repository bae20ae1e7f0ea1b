package tools

import (
	"encoding/json"

	"github.com/parsemcp/parsemcp/parse"
)

// QueryResult is the answer of query_class.
type QueryResult struct {
	ClassName   string            `json:"class_name"`
	ResultCount int               `json:"result_count"`
	Results     []json.RawMessage `json:"results"`
	// OmittedLargeFields are the class's declared large fields, left out
	// because the call named no keys.
	OmittedLargeFields []string `json:"omitted_large_fields,omitempty"`
	// ElidedFields are fields some row held a value over LargeValueBytes
	// of, replaced by its size; name them in keys to get them.
	ElidedFields           []string            `json:"elided_fields,omitempty"`
	TruncatedIncludeFields map[string][]string `json:"truncated_include_fields,omitempty"`
	CanonicalFilterApplied *bool               `json:"canonical_filter_applied,omitempty"`
	Page
	all []json.RawMessage
}

func (r *QueryResult) pageRows() int { return len(r.all) }

func (r *QueryResult) rowBytes(i int) int { return len(r.all[i]) }

func (r *QueryResult) keepRows(n int) {
	r.Results = r.all[:n]
	r.ResultCount = n
	r.cut(n, len(r.all))
}

func (r *QueryResult) objectRows() []map[string]any { return decodeRows(r.all) }

func objectMaps(rows []parse.Object) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// ObjectResult is the answer of get_object: one object in full.
type ObjectResult struct {
	ClassName string          `json:"class_name"`
	Object    json.RawMessage `json:"object"`
}

func (r *ObjectResult) objectRows() []map[string]any { return decodeRows([]json.RawMessage{r.Object}) }

// ObjectsResult is the answer of get_objects.
type ObjectsResult struct {
	ClassName string                  `json:"class_name"`
	Objects   map[string]parse.Object `json:"objects"`
	Missing   []string                `json:"missing"`
	Requested int                     `json:"requested"`
	Found     int                     `json:"found"`
	// ElidedFields: see QueryResult.
	ElidedFields []string `json:"elided_fields,omitempty"`
	Truncated    bool     `json:"truncated,omitempty"`
	RowsLeftOut  int      `json:"rows_left_out,omitempty"`
	// NextCall fetches the found objects the budget left out.
	NextCall *NextCall      `json:"next_call,omitempty"`
	found    []parse.Object // in request order
	args     map[string]any
}

func (r *ObjectsResult) pageRows() int { return len(r.found) }

func (r *ObjectsResult) keepRows(n int) {
	r.Objects = make(map[string]parse.Object, n)
	for _, o := range r.found[:n] {
		r.Objects[o[parse.FieldObjectID].(string)] = o
	}
	rest := make([]string, 0, len(r.found)-n)
	for _, o := range r.found[n:] {
		rest = append(rest, o[parse.FieldObjectID].(string))
	}
	r.Found = n
	r.Truncated = n < len(r.found)
	r.RowsLeftOut = len(r.found) - n
	r.NextCall = nil
	if r.Truncated {
		args := map[string]any{}
		for k, v := range r.args {
			args[k] = v
		}
		args["ids"] = rest
		r.NextCall = &NextCall{Tool: "get_objects", Arguments: args}
	}
}

func (r *ObjectsResult) objectRows() []map[string]any { return objectMaps(r.found) }

// RowsResult is the answer of aggregate: the pipeline's output rows.
type RowsResult struct {
	ClassName      string            `json:"class_name"`
	PipelineStages int               `json:"pipeline_stages"`
	PointerClasses map[string]string `json:"pointer_classes,omitempty"`
	ResultCount    int               `json:"result_count"`
	Results        []map[string]any  `json:"results"`
	AutoLimited    bool              `json:"auto_limited,omitempty"`
	AutoLimit      int               `json:"auto_limit,omitempty"`
	Hint           string            `json:"hint,omitempty"`
	Page
	all []map[string]any
}

func (r *RowsResult) pageRows() int { return len(r.all) }

func (r *RowsResult) keepRows(n int) {
	r.Results = r.all[:n]
	r.ResultCount = n
	r.cut(n, len(r.all))
}

func (r *RowsResult) objectRows() []map[string]any { return r.all }

// start starts the page of rows read with one more than limit (the extra
// one says more follow) and returns the rows of the page.
func (p *Page) start(rows []any, tool string, next map[string]any, limit, skip int) []any {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	*p = newPage(tool, next, limit, skip, len(rows), more)
	return rows
}

// GroupsResult is the answer of group_by and group_by_date.
type GroupsResult struct {
	ClassName    string `json:"class_name"`
	Field        string `json:"field"`
	Interval     string `json:"interval,omitempty"`
	Timezone     string `json:"timezone,omitempty"`
	Operation    string `json:"operation"`
	Sort         string `json:"sort"`
	GroupCount   int    `json:"group_count"`
	Groups       []any  `json:"groups"`
	PointerClass string `json:"pointer_class,omitempty"`
	Hint         string `json:"hint,omitempty"`
	Page
	all []any
}

// setRows sets the groups read (up to limit+1: one more says more follow).
func (r *GroupsResult) setRows(rows []any, tool string, next map[string]any, limit, skip int) {
	r.all = r.Page.start(rows, tool, next, limit, skip)
	r.Groups, r.GroupCount = r.all, len(r.all)
}

func (r *GroupsResult) pageRows() int { return len(r.all) }

func (r *GroupsResult) keepRows(n int) {
	r.Groups, r.GroupCount = r.all[:n], n
	r.cut(n, len(r.all))
}

// ValuesResult is the answer of distinct.
type ValuesResult struct {
	ClassName    string `json:"class_name"`
	Field        string `json:"field"`
	Count        int    `json:"count"`
	Values       []any  `json:"values"`
	PointerClass string `json:"pointer_class,omitempty"`
	Page
	all []any
}

// setRows sets the values read (up to limit+1: one more says more follow).
func (r *ValuesResult) setRows(rows []any, tool string, next map[string]any, limit, skip int) {
	r.all = r.Page.start(rows, tool, next, limit, skip)
	r.Values, r.Count = r.all, len(r.all)
}

func (r *ValuesResult) pageRows() int { return len(r.all) }

func (r *ValuesResult) keepRows(n int) {
	r.Values, r.Count = r.all[:n], n
	r.cut(n, len(r.all))
}
