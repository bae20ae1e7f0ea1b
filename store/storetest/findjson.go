package storetest

import (
	"bytes"
	"testing"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// sameAsFindJSON holds a store.JSONFinder's FindJSON to its Find: for q,
// whose Find returned rows, FindJSON must give each row's JSON text as
// internal/jsonenc encodes it, byte for byte. mustFind runs it on every
// find of the suite, so every case the suite covers covers FindJSON too.
func sameAsFindJSON(t *testing.T, s store.Store, q *query.Query, rows []parse.Object) {
	t.Helper()
	jf, ok := s.(store.JSONFinder)
	if !ok {
		return
	}
	raw, err := jf.FindJSON(ctx, q, nil)
	if err != nil {
		t.Fatalf("FindJSON %s: %v (Find succeeded)", q.Class, err)
	}
	if len(raw) != len(rows) {
		t.Fatalf("FindJSON %s: %d rows, Find %d", q.Class, len(raw), len(rows))
	}
	for i, r := range rows {
		want, err := jsonenc.Marshal(r)
		if err != nil {
			t.Fatalf("encode row %d: %v", i, err)
		}
		if !bytes.Equal(raw[i], want) {
			t.Fatalf("FindJSON %s row %d:\n got %s\nwant %s", q.Class, i, raw[i], want)
		}
	}
}

// testFindJSONKeep: FindJSON leaves out exactly the fields keep refuses,
// the ACL and Relations included, and keeps the others' bytes.
func testFindJSONKeep(t *testing.T, s store.Store) {
	jf, ok := s.(store.JSONFinder)
	if !ok {
		t.Skip("the store is not a store.JSONFinder")
	}
	createEverything(t, s)
	mustCreate(t, s, "Everything", decodeObjects(t, `[
	  {"objectId": "e1", "str": "<b>&</b> \u2028", "num": 1.5, "flag": true, "day": {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"},
	   "obj": {"z": 1, "a": [null]}, "ptr": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	   "ACL": {"*": {"read": true}}},
	  {"objectId": "e2", "num": 2, "ptr": {"__type": "Pointer", "className": "_User", "objectId": "u2"}, "day": {"__type": "Date", "iso": "1969-12-31T23:59:59.999Z"}}
	]`))
	q := &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Limit: -1, Order: []query.OrderKey{{Field: parse.FieldObjectID}}}
	rows := mustFind(t, s, q)
	for _, drop := range [][]string{{}, {"ACL"}, {"rel", "str", "objectId"}, {"obj", "ptr", "day", "createdAt", "updatedAt"}} {
		keep := func(f string) bool {
			for _, d := range drop {
				if d == f {
					return false
				}
			}
			return true
		}
		raw, err := jf.FindJSON(ctx, q, keep)
		if err != nil {
			t.Fatalf("FindJSON: %v", err)
		}
		for i, r := range rows {
			kept := parse.Object{}
			for k, v := range r {
				if keep(k) {
					kept[k] = v
				}
			}
			want, _ := jsonenc.Marshal(kept)
			if !bytes.Equal(raw[i], want) {
				t.Errorf("without %v, row %d:\n got %s\nwant %s", drop, i, raw[i], want)
			}
		}
	}
}
