package parserest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/store"
)

// Parse Server's error codes (Parse.Error) this store maps.
const (
	codeOtherCause          = -1
	codeInternalServer      = 1
	codeConnectionFailed    = 100
	codeObjectNotFound      = 101
	codeInvalidQuery        = 102
	codeInvalidClassName    = 103
	codeMissingObjectID     = 104
	codeInvalidKeyName      = 105
	codeInvalidPointer      = 106
	codeInvalidJSON         = 107
	codeIncorrectType       = 111
	codeOperationForbidden  = 119
	codeInvalidNestedKey    = 121
	codeDuplicateValue      = 137
	codeInvalidRoleName     = 139
	codeScriptFailed        = 141
	codeValidationError     = 142
	codeRequestLimit        = 155
	codeInvalidSessionToken = 209
)

// APIError is an error answer of Parse Server: its code and message.
type APIError struct {
	Status  int    // HTTP status
	Code    int    `json:"code"`
	Message string `json:"error"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("Parse Server error %d: %s", e.Code, e.Message)
}

// ParseCode is Parse Server's error code (a tool failure it causes
// carries it, when no store error names it).
func (e *APIError) ParseCode() int { return e.Code }

// Unwrap maps Parse Server's codes to the store's errors.
func (e *APIError) Unwrap() error {
	switch e.Code {
	case codeObjectNotFound:
		return store.ErrObjectNotFound
	case codeOperationForbidden:
		// Parse Server on PostgreSQL also answers 119 for what it cannot
		// do ("Postgres doesn't support this query type yet").
		if strings.Contains(e.Message, "support") {
			return store.ErrUnsupported
		}
		return store.ErrPermissionDenied
	case codeInvalidSessionToken:
		return store.ErrPermissionDenied
	case codeRequestLimit:
		return store.ErrRateLimited
	case codeInvalidQuery, codeInvalidClassName, codeMissingObjectID, codeInvalidKeyName, codeInvalidPointer,
		codeInvalidJSON, codeIncorrectType, codeInvalidNestedKey, codeDuplicateValue, codeInvalidRoleName, codeValidationError:
		return store.ErrInvalid
	}
	if e.Status == http.StatusTooManyRequests { // Parse Server's rate limit (code 100)
		return store.ErrRateLimited
	}
	if e.Status == http.StatusForbidden || e.Status == http.StatusUnauthorized {
		return store.ErrPermissionDenied
	}
	return nil
}

// credential is who a request acts as: the master key, a session token,
// or neither (anonymous: public rows only). The zero value is anonymous.
type credential struct {
	master bool
	token  string
}

// request is one REST call.
type request struct {
	method string
	path   string // below the server URL, e.g. "/classes/Ticket"
	query  url.Values
	body   any
	cred   credential
}

// maxQueryString is the longest query string sent in a URL.
const maxQueryString = 4000

// Retry policy: network failures and Parse Server's request limit (155)
// are retried with exponential backoff and jitter for as long as the
// context's deadline (a tool call's time limit) leaves time for the next
// wait; a context without a deadline is tried at most maxAttempts times.
const (
	maxAttempts  = 8
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// do sends r and decodes a successful answer into out (nil: discard).
func (s *Store) do(ctx context.Context, r request, out any) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("%w: %v", store.ErrInvalid, err)
		}
	}
	u := s.base + r.path
	if len(r.query) > 0 {
		if q := r.query.Encode(); len(q) <= maxQueryString || r.method != http.MethodGet {
			u += "?" + q
		} else {
			// Too long for a URL: Parse Server takes the parameters of a
			// GET in a POST body with "_method": "GET".
			m := map[string]any{"_method": http.MethodGet}
			for k, vs := range r.query {
				m[k] = vs[0]
			}
			r.method = http.MethodPost
			body, _ = json.Marshal(m)
		}
	}
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		err := s.once(ctx, r, u, body, out, attempt)
		if err == nil {
			return nil
		}
		_, bounded := ctx.Deadline()
		if !s.retryable(r, err) || (!bounded && attempt == maxAttempts) {
			return s.final(err)
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return s.final(err) // no time left to try again
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.final(err)
		case <-t.C:
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// final wraps a last failure in the store's error for it.
func (s *Store) final(err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, store.ErrPermissionDenied) || errors.Is(err, store.ErrInvalid) {
		return err
	}
	return fmt.Errorf("%w: Parse Server at %s: %v", store.ErrUnavailable, s.display, err)
}

// retryable reports whether err may go away by trying again: the request
// limit, a connection that could not be made (nothing was sent), and, for
// reads, any network failure or a 5xx answer without a Parse error code.
func (s *Store) retryable(r request, err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.Code == codeRequestLimit || ae.Status == http.StatusTooManyRequests {
			return true
		}
		return r.method == http.MethodGet && ae.Code == 0 && ae.Status >= 500
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	if r.method == http.MethodGet && (errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		return true
	}
	return false
}

func (s *Store) once(ctx context.Context, r request, u string, body []byte, out any, attempt int) (err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Parse-Application-Id", s.cfg.AppID)
	switch {
	case s.cfg.RESTKey != "":
		req.Header.Set("X-Parse-REST-API-Key", s.cfg.RESTKey)
	case s.cfg.JavaScriptKey != "":
		req.Header.Set("X-Parse-Javascript-Key", s.cfg.JavaScriptKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case r.cred.master:
		if s.cfg.MasterKey == "" {
			return fmt.Errorf("%w: this operation needs the Parse Server master key (PARSEMCP_PARSE_MASTER_KEY)", store.ErrPermissionDenied)
		}
		req.Header.Set("X-Parse-Master-Key", s.cfg.MasterKey)
	case r.cred.token != "":
		req.Header.Set("X-Parse-Session-Token", r.cred.token)
	}
	status := 0
	end := traceCall(ctx, req, r.path, attempt)
	defer func() {
		code := 0
		if ae, ok := err.(*APIError); ok {
			code = ae.Code
		}
		end(status, code, err)
	}()
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxResponseBytes+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > s.cfg.MaxResponseBytes {
		return fmt.Errorf("%w: Parse Server's answer is larger than %d bytes", store.ErrInvalid, s.cfg.MaxResponseBytes)
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || (ae.Code == 0 && ae.Message == "") {
			ae.Message = http.StatusText(resp.StatusCode)
		}
		return ae
	}
	if out == nil {
		return nil
	}
	// encoding/json's answers in a fraction of its time (a find page's
	// rows are most of a call's work here).
	if err := jsonenc.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode Parse Server's answer to %s %s: %w", r.method, r.path, err)
	}
	return nil
}
