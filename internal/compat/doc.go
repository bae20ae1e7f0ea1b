// Package compat holds the differential suite: the same requests through
// Parse Server 9 (internal/testing/parseserver) and through parsemcp, on the same
// PostgreSQL data, with every difference either fixed or listed in
// docs/COMPATIBILITY.md. It has tests only.
package compat
