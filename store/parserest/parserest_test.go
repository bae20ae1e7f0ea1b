package parserest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// startServer starts a Parse Server for t (custom objectIds allowed: the
// suite's fixtures use fixed ids).
func startServer(t *testing.T) *parseserver.Server {
	t.Helper()
	return parseserver.Start(t, parseserver.Options{CustomObjectIDs: true, JSKey: "js-key"})
}

func openStore(t *testing.T, srv *parseserver.Server) *parserest.Store {
	t.Helper()
	st, err := parserest.Open(context.Background(), parserest.Config{
		ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), JavaScriptKey: srv.JSKey(), Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// serverWithNotes starts a Parse Server and opens the store on it with
// one class, Note (a String field text).
func serverWithNotes(t *testing.T) (*parseserver.Server, *parserest.Store) {
	t.Helper()
	srv := startServer(t)
	st := openStore(t, srv)
	note := parse.NewSchema("Note")
	note.Fields["text"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(context.Background(), note); err != nil {
		st.Close()
		t.Fatal(err)
	}
	return srv, st
}

// reset empties the Parse Server between subtests: every object of every
// class is purged, the classes a test made are dropped, and the system
// classes lose the fields and permissions a test gave them.
func reset(t *testing.T, srv *parseserver.Server) {
	t.Helper()
	code, body := srv.Request(http.MethodGet, "/schemas", nil, "", true)
	if code != http.StatusOK {
		t.Fatalf("schemas: %d %s", code, body)
	}
	var resp struct {
		Results []struct {
			ClassName string                     `json:"className"`
			Fields    map[string]json.RawMessage `json:"fields"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]parse.Schema{}
	for _, s := range parse.SystemSchemas() {
		defaults[s.ClassName] = s
	}
	for _, c := range resp.Results {
		if code, body := srv.Request(http.MethodDelete, "/purge/"+url.PathEscape(c.ClassName), nil, "", true); code != http.StatusOK {
			t.Fatalf("purge %s: %d %s", c.ClassName, code, body)
		}
		def, system := defaults[c.ClassName]
		if !system {
			if code, body := srv.Request(http.MethodDelete, "/schemas/"+url.PathEscape(c.ClassName), nil, "", true); code != http.StatusOK {
				t.Fatalf("drop %s: %d %s", c.ClassName, code, body)
			}
			continue
		}
		drop := map[string]any{}
		for f := range c.Fields {
			if _, keep := def.Fields[f]; !keep && !isParseInternal(c.ClassName, f) {
				drop[f] = map[string]any{"__op": "Delete"}
			}
		}
		upd := map[string]any{"className": c.ClassName, "fields": drop, "classLevelPermissions": defaultCLP(c.ClassName)}
		if code, body := srv.Request(http.MethodPut, "/schemas/"+url.PathEscape(c.ClassName), upd, "", true); code != http.StatusOK {
			t.Fatalf("reset %s: %d %s", c.ClassName, code, body)
		}
	}
}

// isParseInternal names the fields Parse Server keeps on its system
// classes whatever the app does.
func isParseInternal(class, field string) bool {
	switch field {
	case "objectId", "createdAt", "updatedAt", "ACL", "password":
		return true
	}
	return false
}

func defaultCLP(class string) map[string]any {
	all := map[string]any{"*": true}
	clp := map[string]any{"find": all, "count": all, "get": all, "create": all, "update": all, "delete": all, "addField": all, "protectedFields": map[string]any{"*": []any{}}}
	if class == parse.ClassUser {
		clp["protectedFields"] = map[string]any{"*": []any{"email", "authData"}}
	}
	if class == parse.ClassSession {
		none := map[string]any{}
		for _, op := range []string{"find", "count", "get", "create", "update", "delete", "addField"} {
			clp[op] = none
		}
	}
	return clp
}

// seeded is the store under test with one addition for the suite's
// fixtures: Parse Server assigns createdAt and updatedAt itself (its REST
// API takes no values for them), so after a Create the timestamps the
// fixture asked for are written into Parse Server's database directly, as
// a data import would, and a field the fixture left out loses the
// defaultValue Parse Server gave it (an import applies none). Every read
// and write still goes through the REST API.
type seeded struct {
	*parserest.Store
	dbMu *sync.Mutex // one connection, shared by concurrent writers
	db   *pgx.Conn
}

func (s *seeded) Create(ctx context.Context, class string, objs []parse.Object) error {
	want := make([][2]any, len(objs))
	var unset [][]string
	sch, _ := s.Store.Schema(ctx, class)
	for i, o := range objs {
		var absent []string
		if o != nil {
			want[i] = [2]any{o[parse.FieldCreatedAt], o[parse.FieldUpdatedAt]}
			for name, f := range sch.Fields {
				if f.DefaultValue != nil && o[name] == nil {
					absent = append(absent, name)
				}
			}
		}
		unset = append(unset, absent)
	}
	if err := s.Store.Create(ctx, class, objs); err != nil {
		return err
	}
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	for i, o := range objs {
		for _, name := range unset[i] {
			if _, err := s.db.Exec(ctx, `UPDATE `+pgx.Identifier{class}.Sanitize()+` SET `+pgx.Identifier{name}.Sanitize()+` = NULL WHERE "objectId" = $1`, object.ID(o)); err != nil {
				return err
			}
		}
		c, u := want[i][0], want[i][1]
		if c == nil && u == nil {
			continue
		}
		created, _ := parse.DateValue(toDate(c))
		updated, ok := parse.DateValue(toDate(u))
		if c == nil {
			created, _ = parse.DateValue(toDate(o[parse.FieldCreatedAt]))
		}
		if !ok {
			updated = created
		}
		if _, err := s.db.Exec(ctx, `UPDATE `+pgx.Identifier{class}.Sanitize()+` SET "createdAt" = $1, "updatedAt" = $2 WHERE "objectId" = $3`,
			created, updated, object.ID(o)); err != nil {
			return err
		}
		o[parse.FieldCreatedAt] = parse.FormatDate(created)
		o[parse.FieldUpdatedAt] = parse.FormatDate(updated)
	}
	return nil
}

func toDate(v any) any {
	if s, ok := v.(string); ok {
		return map[string]any{"__type": "Date", "iso": s}
	}
	return v
}

func dbConn(t *testing.T, srv *parseserver.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, srv.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
