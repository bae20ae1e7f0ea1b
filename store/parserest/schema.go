package parserest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/prepare"
)

// Parse Server's code for dropping a class that still holds objects.
const codeClassNotEmpty = 255

var master = credential{master: true}

// loadSchemas reads GET /schemas (master key).
func (s *Store) loadSchemas(ctx context.Context) (map[string]parse.Schema, error) {
	var resp struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := s.do(ctx, request{method: http.MethodGet, path: "/schemas", cred: master}, &resp); err != nil {
		return nil, err
	}
	out := make(map[string]parse.Schema, len(resp.Results))
	for _, raw := range resp.Results {
		var head struct {
			ClassName string `json:"className"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("schemas: %w", err)
		}
		sch, err := parse.UnmarshalStoredSchema(head.ClassName, raw)
		if err != nil {
			return nil, err
		}
		normalizeCLP(&sch.CLP)
		out[head.ClassName] = sch
	}
	// Parse Server creates the system classes on first use; they exist
	// all along for a Parse app.
	for _, sys := range parse.SystemSchemas() {
		if _, ok := out[sys.ClassName]; !ok {
			out[sys.ClassName] = sys
		}
	}
	return out, nil
}

// normalizeCLP reads left-out operations as left out, drops the
// protectedFields Parse Server reports for a class nobody protected fields
// of ({"*": []}: every list empty), and reads the CLP
// Parse Server stores for a class created without one (every operation
// {"*": true}) as the empty CLP, which means the same.
func normalizeCLP(c *parse.CLP) {
	// Parse Server fills an operation left out as {}: both mean master key
	// only; read it as left out, as it was written.
	for _, p := range []**parse.OpPerm{&c.Get, &c.Find, &c.Count, &c.Create, &c.Update, &c.Delete, &c.AddField} {
		if *p != nil && len((*p).Entries) == 0 && len((*p).PointerFields) == 0 && !(*p).RequiresAuthentication {
			*p = nil
		}
	}
	// An empty list is meaningful next to a non-empty one ("role:Manager":
	// [] lifts the "*" list for that role's users): only a protectedFields
	// naming no field at all is dropped.
	named := false
	for _, v := range c.ProtectedFields {
		named = named || len(v) > 0
	}
	if !named {
		c.ProtectedFields = nil
	}
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(parse.PublicCLP())
	if string(a) == string(b) {
		*c = parse.CLP{}
	}
}

// Schemas returns every class's schema (master key).
func (s *Store) Schemas(ctx context.Context) ([]parse.Schema, error) { return s.schemas.All(ctx) }

// Schema returns one class's schema.
func (s *Store) Schema(ctx context.Context, class string) (parse.Schema, error) {
	return s.schemas.One(ctx, class)
}

// SharedSchema is store.SharedSchemas: the cached schema itself, read-only.
func (s *Store) SharedSchema(ctx context.Context, class string) (parse.Schema, error) {
	return s.schemas.Shared(ctx, class)
}

// restSchema renders sch as POST /schemas takes it: the user fields, the
// class-level permissions and the indexes.
func restSchema(sch parse.Schema) map[string]any {
	fields := map[string]any{}
	for name, f := range sch.Fields {
		if !parse.IsSystemField(name) {
			fields[name] = f
		}
	}
	body := map[string]any{"className": sch.ClassName, "fields": fields}
	if !sch.CLP.IsZero() {
		// As stored: an operation left out is master-key only, in Parse
		// Server as in parse.CLP.Decide.
		body["classLevelPermissions"] = sch.CLP
	}
	if len(sch.Indexes) > 0 {
		body["indexes"] = sch.Indexes
	}
	return body
}

// CreateClass creates a class (POST /schemas/Class, master key). A system
// class Parse Server has not created yet gets its extra fields added.
func (s *Store) CreateClass(ctx context.Context, sch parse.Schema) error {
	if err := sch.Validate(); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	defer s.schemas.Invalidate()
	existing, err := s.loadSchemas(ctx)
	if err != nil {
		return err
	}
	if _, ok := existing[sch.ClassName]; ok {
		return fmt.Errorf("%w: %s", store.ErrClassExists, sch.ClassName)
	}
	err = s.do(ctx, request{method: http.MethodPost, path: "/schemas/" + url.PathEscape(sch.ClassName), body: restSchema(sch), cred: master}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == codeInvalidClassName {
		return fmt.Errorf("%w: %s (%s)", store.ErrClassExists, sch.ClassName, ae.Message)
	}
	return err
}

// DeleteClass drops an empty class (DELETE /schemas/Class, master key).
func (s *Store) DeleteClass(ctx context.Context, class string) error {
	if err := prepare.CheckDeleteClass(class); err != nil {
		return err
	}
	defer s.schemas.Invalidate()
	if _, err := s.schemas.Shared(ctx, class); err != nil {
		return err
	}
	n, err := s.count(ctx, class, nil, query.NoACLFilter)
	if err != nil {
		return err
	}
	if n > 0 {
		return store.ClassNotEmpty(class, n)
	}
	err = s.do(ctx, request{method: http.MethodDelete, path: "/schemas/" + url.PathEscape(class), cred: master}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == codeClassNotEmpty {
		return fmt.Errorf("%w: %s: %s", store.ErrClassNotEmpty, class, ae.Message)
	}
	return err
}
