//go:build bench

package bench

import (
	"context"
	"testing"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// BenchmarkRows compares the two ways a find page reaches JSON text in
// each store (the find of BenchmarkHandler, 101 rows): objects (Find
// builds a map per row, then jsonenc encodes the page) and json (FindJSON
// writes each row's text from its columns).
func BenchmarkRows(b *testing.B) {
	for _, backend := range []string{SQLite, Postgres} {
		b.Run(backend, func(b *testing.B) { benchRowsOf(b, backend) })
	}
}

func benchRowsOf(b *testing.B, backend string) {
	s := envs.session(b, backend, "master")
	ctx := context.Background()
	p := query.Parser{Resolve: func(c string) (parse.Schema, error) { return s.Env.Store.Schema(ctx, c) }}
	sch, err := s.Env.Store.Schema(ctx, demo.ClassTicket)
	if err != nil {
		b.Fatal(err)
	}
	where, err := p.Where(sch, map[string]any{"status": "open"})
	if err != nil {
		b.Fatal(err)
	}
	q := &query.Query{Class: demo.ClassTicket, Where: where, Order: []query.OrderKey{{Field: parse.FieldCreatedAt, Desc: true}}, Limit: 101, ReadACL: query.NoACLFilter}
	jf, ok := s.Env.Store.(store.JSONFinder)
	if !ok {
		b.Skip("the store is no store.JSONFinder")
	}
	b.Run("objects", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows, err := s.Env.Store.Find(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jsonenc.Marshal(rows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jf.FindJSON(ctx, q, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
