// Package schemacache caches a backend's schemas, with a staleness bound
// for the changes other processes make.
package schemacache

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// TTL bounds how stale a cached schema may be when another process
// (another server, Parse Server itself) changes the database; changes made
// through the same Store invalidate the cache at once.
const TTL = time.Second

// Cache caches a backend's schemas (a SQL backend's `_SCHEMA` table).
type Cache struct {
	Load func(ctx context.Context) (map[string]parse.Schema, error)

	mu       sync.Mutex
	schemas  map[string]parse.Schema
	loadedAt time.Time
}

func (c *Cache) get(ctx context.Context) (map[string]parse.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schemas != nil && time.Since(c.loadedAt) < TTL {
		return c.schemas, nil
	}
	m, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	c.schemas, c.loadedAt = m, time.Now()
	return m, nil
}

// Invalidate drops the cache.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	c.schemas = nil
	c.mu.Unlock()
}

// All returns every schema sorted by class name.
func (c *Cache) All(ctx context.Context) ([]parse.Schema, error) {
	m, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]parse.Schema, 0, len(m))
	for _, s := range m {
		out = append(out, s.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClassName < out[j].ClassName })
	return out, nil
}

// One returns a copy of a class's schema, or an error wrapping
// store.ErrClassNotFound.
func (c *Cache) One(ctx context.Context, class string) (parse.Schema, error) {
	s, err := c.Shared(ctx, class)
	if err != nil {
		return parse.Schema{}, err
	}
	return s.Clone(), nil
}

// Shared returns the cached schema itself, for read-only use inside a
// backend (no copy on the query path).
func (c *Cache) Shared(ctx context.Context, class string) (parse.Schema, error) {
	m, err := c.get(ctx)
	if err != nil {
		return parse.Schema{}, err
	}
	s, ok := m[class]
	if !ok {
		return parse.Schema{}, store.ClassNotFound(class)
	}
	return s, nil
}
