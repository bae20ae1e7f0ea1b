package parserest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/parserest/internal/restwhere"
)

// pageSize is how many rows one GET /classes asks for when the caller
// wants every row (Limit < 0): Parse Server answers 100 rows without a
// limit.
const pageSize = 1000

// renderer renders constraints with this store's schemas; a $relatedTo
// whose owner carries the scope's rules is decided by a find of the owner
// with the same identity.
func (s *Store) renderer(ctx context.Context, acl query.ACLFilter) restwhere.Renderer {
	r := restwhere.Renderer{Resolve: func(c string) (parse.Schema, error) { return s.schemas.Shared(ctx, c) }}
	r.Owner = func(q *query.Query) (bool, error) {
		oq := *q
		oq.Limit, oq.Keys = 1, []string{}
		if !oq.ReadACL.IsSet() {
			oq.ReadACL = acl
		}
		rows, err := s.Find(ctx, &oq)
		return len(rows) > 0, err
	}
	return r
}

func (s *Store) where(ctx context.Context, q *query.Query) (map[string]any, error) {
	w, err := s.renderer(ctx, q.ReadACL).QueryWhere(q)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", store.ErrUnsupported, err)
	}
	return w, nil
}

func jsonParam(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Find runs GET /classes/Class as q's identity.
func (s *Store) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	sch, err := s.schemas.Shared(ctx, q.Class)
	if err != nil {
		return nil, err
	}
	if !q.ReadACL.IsSet() {
		return []parse.Object{}, nil // an undecided filter admits no row
	}
	rq, scoreKeys, scored, err := scoreQuery(sch, q)
	if err != nil {
		return nil, err
	}
	w, err := s.where(ctx, rq)
	if err != nil {
		return nil, err
	}
	params := url.Values{}
	if len(w) > 0 {
		params.Set("where", jsonParam(w))
	}
	switch {
	case scored:
		params.Set("keys", strings.Join(scoreKeys, ","))
	case q.Keys != nil:
		keys := []string{parse.FieldObjectID}
		keys = append(keys, q.Keys...)
		params.Set("keys", strings.Join(keys, ","))
	}
	path := "/classes/" + url.PathEscape(q.Class)
	if id, ok := singleID(q); ok {
		// One object by id: GET /classes/Class/id, Parse Server's cheapest
		// read (a missing or unreadable object is 101).
		var obj parse.Object
		p := url.Values{}
		if k := params.Get("keys"); k != "" {
			p.Set("keys", k)
		}
		err := s.call(ctx, q.ReadACL, request{method: http.MethodGet, path: objectPath(q.Class, id), query: p}, &obj)
		if errors.Is(err, store.ErrObjectNotFound) {
			return []parse.Object{}, nil
		}
		if err != nil {
			return nil, err
		}
		return s.shape(sch, q, []parse.Object{obj}), nil
	}
	if q.Limit >= 0 {
		// objectId breaks ties, as on the SQL stores.
		params.Set("order", strings.Join(orderParam(query.StableOrder(q.Order)), ","))
		params.Set("limit", strconv.Itoa(q.Limit))
		if q.Skip > 0 {
			params.Set("skip", strconv.Itoa(q.Skip))
		}
		rows, err := s.findPage(ctx, q.ReadACL, path, params)
		return s.shape(sch, q, rows), err
	}
	// Every row.
	var all []parse.Object
	err = s.scan(ctx, q.ReadACL, path, w, params, q.Order, q.Skip, func(page []parse.Object) error {
		all = append(all, page...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.shape(sch, q, all), nil
}

// scan calls each with every page of path's rows matching where, as acl's
// identity (params carry the rest: keys), pageSize rows a page, until a
// page comes back empty, so a server capping its pages below pageSize
// (maxLimit) is paged through, not cut short. In objectId order from the
// first row (no order, no skip) the pages go by keyset, each starting
// after the last id of the one before, so rows written meanwhile are
// neither skipped nor read twice; otherwise by skip, in order with
// objectId breaking ties.
func (s *Store) scan(ctx context.Context, acl query.ACLFilter, path string, where map[string]any, params url.Values, order []query.OrderKey, skip int, each func([]parse.Object) error) error {
	keyset := len(order) == 0 && skip == 0
	params.Set("order", strings.Join(orderParam(query.StableOrder(order)), ","))
	params.Set("limit", strconv.Itoa(pageSize))
	last := ""
	for {
		w := where
		switch {
		case keyset && last != "":
			after := map[string]any{parse.FieldObjectID: map[string]any{"$gt": last}}
			if len(where) == 0 {
				w = after
			} else {
				w = map[string]any{"$and": []any{where, after}}
			}
		case !keyset && skip > 0:
			params.Set("skip", strconv.Itoa(skip))
		}
		if len(w) > 0 {
			params.Set("where", jsonParam(w))
		}
		page, err := s.findPage(ctx, acl, path, params)
		if err != nil || len(page) == 0 {
			return err
		}
		if err := each(page); err != nil {
			return err
		}
		skip += len(page)
		if keyset {
			next := object.ID(page[len(page)-1])
			if next == "" || next == last {
				return errors.New("parserest: Parse Server's pages of rows by objectId did not advance")
			}
			last = next
		}
	}
}

// singleID reports the id of a query that selects at most one object by
// objectId alone (equality, or $in of one id) with no skip.
func singleID(q *query.Query) (string, bool) {
	if q.Skip > 0 || q.Limit == 0 {
		return "", false
	}
	idPath := func(p query.Path) bool { return p.Field == parse.FieldObjectID && len(p.Sub) == 0 }
	switch w := q.Where.(type) {
	case query.Cmp:
		if id, ok := w.Value.(string); ok && idPath(w.Path) && w.Op == query.OpEq && !w.ArrayElem && parse.ValidObjectID(id) {
			return id, true
		}
	case query.In:
		if len(w.Values) == 1 && idPath(w.Path) && !w.Not {
			if id, ok := w.Values[0].(string); ok && parse.ValidObjectID(id) {
				return id, true
			}
		}
	}
	return "", false
}

func (s *Store) findPage(ctx context.Context, acl query.ACLFilter, path string, params url.Values) ([]parse.Object, error) {
	var resp struct {
		Results []parse.Object `json:"results"`
	}
	if err := s.call(ctx, acl, request{method: http.MethodGet, path: path, query: params}, &resp); err != nil {
		return nil, err
	}
	return resp.Results, nil
}

// shape makes Parse Server's rows the store's REST form: fields outside
// the schema (internal ones) and unrequested fields are dropped, and File
// values lose their url. The ACL and the Relation markers stay whatever
// the keys, as Parse Server 9 returns them.
func (s *Store) shape(sch parse.Schema, q *query.Query, rows []parse.Object) []parse.Object {
	var want map[string]bool
	if q != nil && q.Keys != nil {
		want = map[string]bool{parse.FieldObjectID: true, parse.FieldCreatedAt: true, parse.FieldUpdatedAt: true, parse.FieldACL: true}
		for _, k := range q.Keys {
			want[k] = true
		}
	}
	score := q != nil && q.WantsScore()
	for _, row := range rows {
		for k := range row {
			f, known := sch.Fields[k]
			switch {
			case score && k == query.ScoreField:
				// The rank (keys named $score: no field of this name was
				// asked for).
			case k == query.ScoreField && !known:
				delete(row, k) // the rank, asked for the order only
			case !known && !parse.IsSystemField(k):
				delete(row, k) // sessionToken, authData leftovers, …
			case want != nil && !want[k] && !(known && f.Type == parse.TypeRelation):
				delete(row, k)
			case known && f.Type == parse.TypeFile:
				// The store's REST form of a File is its name; Parse
				// Server adds the url it serves it at.
				if m, ok := row[k].(map[string]any); ok {
					delete(m, "url")
				}
			}
		}
	}
	if rows == nil {
		rows = []parse.Object{}
	}
	return rows
}

// exactAll is a constraint every row meets: Parse Server answers a count
// without a where with the planner's estimate, so a count always carries
// one.
var exactAll = map[string]any{parse.FieldObjectID: map[string]any{"$exists": true}}

// Count runs GET /classes/Class?count=1&limit=0 as q's identity.
func (s *Store) Count(ctx context.Context, q *query.Query) (int64, error) {
	if _, err := s.schemas.Shared(ctx, q.Class); err != nil {
		return 0, err
	}
	if !q.ReadACL.IsSet() {
		return 0, nil // an undecided filter admits no row
	}
	w, err := s.where(ctx, q)
	if err != nil {
		return 0, err
	}
	return s.count(ctx, q.Class, w, q.ReadACL)
}

// count counts class's rows matching where as acl's identity.
func (s *Store) count(ctx context.Context, class string, where map[string]any, acl query.ACLFilter) (int64, error) {
	if len(where) == 0 {
		where = exactAll
	}
	params := url.Values{"where": {jsonParam(where)}, "count": {"1"}, "limit": {"0"}}
	var resp struct {
		Count int64 `json:"count"`
	}
	err := s.call(ctx, acl, request{method: http.MethodGet, path: "/classes/" + url.PathEscape(class), query: params}, &resp)
	return resp.Count, err
}

// RelatedIDs returns the ids a Relation field links (master key).
func (s *Store) RelatedIDs(ctx context.Context, class, field, owningID string) ([]string, error) {
	sch, err := s.schemas.Shared(ctx, class)
	if err != nil {
		return nil, err
	}
	f, ok := sch.Fields[field]
	if !ok || f.Type != parse.TypeRelation {
		return nil, fmt.Errorf("%w: %s.%s is not a Relation field", store.ErrInvalid, class, field)
	}
	w := map[string]any{"$relatedTo": map[string]any{
		"object": map[string]any{"__type": "Pointer", "className": class, "objectId": owningID}, "key": field}}
	var ids []string
	err = s.scan(ctx, query.NoACLFilter, "/classes/"+url.PathEscape(f.TargetClass), w, url.Values{"keys": {parse.FieldObjectID}}, nil, 0, func(page []parse.Object) error {
		for _, r := range page {
			ids = append(ids, object.ID(r))
		}
		return nil
	})
	return ids, err
}

// orderParam is keys as Parse Server's order parameter takes them.
func orderParam(keys []query.OrderKey) []string {
	order := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		if k.Desc {
			order = append(order, "-"+k.Field)
		} else {
			order = append(order, k.Field)
		}
	}
	return order
}
