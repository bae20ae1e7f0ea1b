package parserest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/internal/prepare"
)

// maxBatch is Parse Server's limit of requests in one POST /batch.
const maxBatch = 50

func objectPath(class, id string) string {
	return "/classes/" + url.PathEscape(class) + "/" + url.PathEscape(id)
}

// Create inserts objs (master key: the governed scope has checked the
// caller's class-level permissions) in one transactional POST /batch per
// 50 objects; an objectId given is kept (Parse Server needs
// allowCustomObjectId for it). Parse Server assigns createdAt and
// updatedAt itself: values given for them are not kept.
func (s *Store) Create(ctx context.Context, class string, objs []parse.Object) error {
	sch, err := s.schemas.Shared(ctx, class)
	if err != nil {
		return err
	}
	rows, err := prepare.Create(sch, objs, time.Now())
	if err != nil {
		return err
	}
	if len(objs) > maxBatch {
		return s.createChunks(ctx, class, objs)
	}
	reqs := make([]map[string]any, len(objs))
	for i, r := range rows {
		body := map[string]any{}
		if object.ID(objs[i]) != "" {
			body[parse.FieldObjectID] = r.ObjectID
		}
		if acl := objs[i][parse.FieldACL]; acl != nil {
			body[parse.FieldACL] = acl
		}
		for j, k := range r.Fields {
			if v := parse.Denormalize(k, r.Types[j], r.Values[j]); v != nil {
				body[k] = s.fileURL(sch, k, v)
			}
		}
		if class == parse.ClassUser && body["authData"] == nil {
			// Parse Server requires a password to create a user; one
			// created here gets a random one nobody knows (log in by a
			// session the master key opens, or reset it).
			body["password"] = randomPassword()
		}
		reqs[i] = map[string]any{"method": http.MethodPost, "path": s.mount + "/classes/" + class, "body": body}
	}
	if len(reqs) == 1 { // one object: a plain create, with Parse Server's own error
		var r batchResult
		err := s.do(ctx, request{method: http.MethodPost, path: "/classes/" + url.PathEscape(class), body: reqs[0]["body"], cred: master}, &r.Success)
		if err != nil {
			return createErr(err)
		}
		objs[0][parse.FieldObjectID] = r.Success.ObjectID
		objs[0][parse.FieldCreatedAt] = r.Success.CreatedAt
		objs[0][parse.FieldUpdatedAt] = r.Success.CreatedAt
		return nil
	}
	var results []batchResult
	err = s.do(ctx, request{method: http.MethodPost, path: "/batch", body: map[string]any{"requests": reqs, "transaction": true}, cred: master}, &results)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == codeInternalServer {
		// A transactional batch that fails reports no cause; the likely
		// one is an objectId already taken.
		return s.batchCause(ctx, class, objs, err)
	}
	if err != nil {
		return createErr(err)
	}
	if len(results) != len(objs) {
		return fmt.Errorf("parserest: batch answered %d results for %d objects", len(results), len(objs))
	}
	for i, r := range results {
		if r.Error != nil {
			return r.Error
		}
		objs[i][parse.FieldObjectID] = r.Success.ObjectID
		objs[i][parse.FieldCreatedAt] = r.Success.CreatedAt
		objs[i][parse.FieldUpdatedAt] = r.Success.CreatedAt
	}
	return nil
}

// createChunks creates more objects than one batch takes, batch by
// batch; when a batch fails, the objects the earlier batches created are
// deleted again, so the call creates all of them or (but for a failure of
// that clean-up, which is logged) none.
func (s *Store) createChunks(ctx context.Context, class string, objs []parse.Object) error {
	for i := 0; i < len(objs); i += maxBatch {
		end := min(i+maxBatch, len(objs))
		if err := s.Create(ctx, class, objs[i:end]); err != nil {
			s.undoCreate(class, objs[:i])
			return err
		}
	}
	return nil
}

func (s *Store) undoCreate(class string, created []parse.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < len(created); i += maxBatch {
		end := min(i+maxBatch, len(created))
		reqs := make([]map[string]any, 0, end-i)
		for _, o := range created[i:end] {
			reqs = append(reqs, map[string]any{"method": http.MethodDelete, "path": s.mount + "/classes/" + class + "/" + object.ID(o)})
		}
		if err := s.do(ctx, request{method: http.MethodPost, path: "/batch", body: map[string]any{"requests": reqs}, cred: master}, nil); err != nil {
			s.log.Error("parserest: a failed create left objects behind", "class", class, "objects", end-i, "err", err)
		}
	}
}

// createErr maps a refused create: a duplicate value (an objectId or a
// unique field already taken) is invalid input.
func createErr(err error) error {
	var ae *APIError
	if errors.As(err, &ae) && (ae.Code == codeDuplicateValue || ae.Code == 202 || ae.Code == 203) {
		return fmt.Errorf("%w: %s", store.ErrInvalid, ae.Message)
	}
	return err
}

// batchCause finds why a transactional batch failed: an objectId taken.
func (s *Store) batchCause(ctx context.Context, class string, objs []parse.Object, err error) error {
	var ids []any
	for _, o := range objs {
		if id := object.ID(o); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		rows, ferr := s.Find(ctx, &query.Query{Class: class, Limit: 1, Keys: []string{}, ReadACL: query.NoACLFilter,
			Where: query.In{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Values: ids}})
		if ferr == nil && len(rows) > 0 {
			return fmt.Errorf("%w: duplicate objectId %s in %s", store.ErrInvalid, object.ID(rows[0]), class)
		}
	}
	return fmt.Errorf("%w: Parse Server refused the batch (nothing was created): %v", store.ErrInvalid, err)
}

type batchResult struct {
	Success struct {
		ObjectID  string `json:"objectId"`
		CreatedAt string `json:"createdAt"`
		UpdatedAt string `json:"updatedAt"`
	} `json:"success"`
	Error *APIError `json:"error"`
}

// AddRelation links relatedIDs to owningID's Relation field (master key).
func (s *Store) AddRelation(ctx context.Context, class, field, owningID string, relatedIDs []string) error {
	sch, err := s.schemas.Shared(ctx, class)
	if err != nil {
		return err
	}
	f, ok := sch.Fields[field]
	if !ok || f.Type != parse.TypeRelation {
		return fmt.Errorf("%w: %s.%s is not a Relation field", store.ErrInvalid, class, field)
	}
	if len(relatedIDs) == 0 {
		return nil
	}
	ptrs := make([]any, len(relatedIDs))
	for i, id := range relatedIDs {
		ptrs[i] = map[string]any{"__type": "Pointer", "className": f.TargetClass, "objectId": id}
	}
	body := map[string]any{field: map[string]any{"__op": "AddRelation", "objects": ptrs}}
	return s.do(ctx, request{method: http.MethodPut, path: objectPath(class, owningID), body: body, cred: master}, nil)
}

// current reads w's object if w selects it: its id, w.Where, and the
// writer's read access (Parse Server checks the write ACL itself).
func (s *Store) current(ctx context.Context, w store.Write) (parse.Object, error) {
	idEq := query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: w.ID}
	where := query.Expr(idEq)
	if w.Where != nil {
		where = query.And{Exprs: []query.Expr{idEq, w.Where}}
	}
	// The row must meet w.Where: checked with the master key, since the
	// writer's read access is not the question (its write access is, and
	// Parse Server decides that on the write).
	rows, err := s.Find(ctx, &query.Query{Class: w.Class, Where: where, Limit: 1, ReadACL: query.NoACLFilter})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, prepare.ObjectNotFound(w)
	}
	return rows[0], nil
}

// notFound turns Parse Server's refusals of a write into the store's
// ObjectNotFound (missing and not writable read the same).
func notFound(w store.Write, err error) error {
	if errors.Is(err, store.ErrObjectNotFound) {
		return prepare.ObjectNotFound(w)
	}
	return err
}

// Update changes one object with PUT /classes/Class/id as the writer's
// identity (w.WriteACL), after checking that it meets w.Where. The check
// and the write are two requests: a change in between by another client
// is not seen (Parse Server's REST API has no conditional update).
func (s *Store) Update(ctx context.Context, w store.Write, set parse.Object) (before, after parse.Object, err error) {
	if err := prepare.CheckWrite(w); err != nil {
		return nil, nil, err
	}
	sch, err := s.schemas.Shared(ctx, w.Class)
	if err != nil {
		return nil, nil, err
	}
	upd, err := prepare.Update(sch, set)
	if err != nil {
		return nil, nil, err
	}
	if !w.WriteACL.IsSet() {
		return nil, nil, prepare.ObjectNotFound(w) // an undecided filter admits no row
	}
	if before, err = s.current(ctx, w); err != nil {
		return nil, nil, err
	}
	unset := map[string]any{"__op": "Delete"}
	body := map[string]any{}
	for i, k := range upd.Fields {
		if upd.Values[i].Null {
			body[k] = unset
		} else {
			body[k] = s.fileURL(sch, k, parse.Denormalize(k, upd.Types[i], upd.Values[i]))
		}
	}
	if upd.SetACL {
		if acl, _ := set[parse.FieldACL].(map[string]any); acl != nil && acl["__op"] == nil {
			body[parse.FieldACL] = acl
		} else {
			body[parse.FieldACL] = unset
		}
	}
	if err := s.call(ctx, w.WriteACL, request{method: http.MethodPut, path: objectPath(w.Class, w.ID), body: body}, nil); err != nil {
		return nil, nil, notFound(w, err)
	}
	rows, err := s.Find(ctx, &query.Query{Class: w.Class, Limit: 1, ReadACL: query.NoACLFilter,
		Where: query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: w.ID}})
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, prepare.ObjectNotFound(w)
	}
	return before, rows[0], nil
}

// Delete removes one object with DELETE /classes/Class/id as the writer's
// identity, after checking that it meets w.Where (see Update).
func (s *Store) Delete(ctx context.Context, w store.Write) (parse.Object, error) {
	if err := prepare.CheckWrite(w); err != nil {
		return nil, err
	}
	if !w.WriteACL.IsSet() {
		return nil, prepare.ObjectNotFound(w) // an undecided filter admits no row
	}
	before, err := s.current(ctx, w)
	if err != nil {
		return nil, err
	}
	if err := s.call(ctx, w.WriteACL, request{method: http.MethodDelete, path: objectPath(w.Class, w.ID)}, nil); err != nil {
		return nil, notFound(w, err)
	}
	return before, nil
}

// fileURL gives a File value without a url the one Parse Server would
// serve it at: Parse Server keeps only the name, but its LiveQuery
// publisher cannot encode a File without a url (the server process dies
// with "Tried to encode an unsaved file").
func (s *Store) fileURL(sch parse.Schema, field string, v any) any {
	if sch.Fields[field].Type != parse.TypeFile {
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		if name, isName := v.(string); isName {
			m = map[string]any{"__type": "File", "name": name}
		} else {
			return v
		}
	}
	name, _ := m["name"].(string)
	if _, has := m["url"]; has || name == "" || m["__type"] != "File" {
		return v
	}
	out := map[string]any{"__type": "File", "name": name,
		"url": s.base + "/files/" + url.PathEscape(s.cfg.AppID) + "/" + url.PathEscape(name)}
	return out
}

func randomPassword() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
