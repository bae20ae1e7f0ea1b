package parserest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// ErrNoRESTIdentity is returned for an identity Parse Server's REST API
// cannot act as: one holding roles but no user (Parse grants roles only
// through a user's session).
var ErrNoRESTIdentity = fmt.Errorf("%w: identity has no Parse Server equivalent", store.ErrPermissionDenied)

// CheckIdentity refuses, at start-up, an identity this store cannot act
// as: master (needs the master key), a user (needs the master key to mint
// its session with /loginAs), anonymous (always possible), or roles
// without a user (never possible). userID "" with no roles and master
// false is anonymous.
func (s *Store) CheckIdentity(master bool, userID string, roles []string) error {
	switch {
	case master:
		if s.cfg.MasterKey == "" {
			return fmt.Errorf("%w: acting with the master key needs %s", ErrNoRESTIdentity, EnvMasterKey)
		}
	case userID != "":
		if s.cfg.MasterKey == "" {
			return fmt.Errorf("%w: acting as user %s needs the master key (%s) to open a session for it, or a session token per request", ErrNoRESTIdentity, userID, EnvMasterKey)
		}
	case len(roles) > 0:
		return fmt.Errorf("%w: roles %v without a user: Parse Server grants roles only to a user's session; act as a user holding them (--as-user) or with a session token", ErrNoRESTIdentity, roles)
	}
	return nil
}

// credentialFor maps an ACL filter (store.Query.ReadACL,
// store.Write.WriteACL) to the credential Parse Server enforces the same
// permissions for. It fails closed: an undecided filter or an entry list
// it cannot honour is an error, never a wider credential.
func (s *Store) credentialFor(ctx context.Context, f query.ACLFilter) (credential, error) {
	switch {
	case !f.IsSet():
		return credential{}, fmt.Errorf("%w: no ACL filter decided for the request", ErrNoRESTIdentity)
	case f.IsOpen():
		return master, nil
	}
	var user string
	roles := 0
	for _, e := range f.Entries() {
		switch {
		case e == parse.PublicKey:
		case strings.HasPrefix(e, parse.RolePrefix):
			roles++
		case user == "":
			user = e
		default:
			return credential{}, fmt.Errorf("%w: two users in one identity (%s, %s)", ErrNoRESTIdentity, user, e)
		}
	}
	switch {
	case user != "":
		if tok := boundToken(ctx, user); tok != "" {
			return credential{token: tok}, nil // the caller's own session
		}
		tok, err := s.sessionFor(ctx, user)
		if err != nil {
			return credential{}, err
		}
		return credential{token: tok}, nil
	case roles > 0:
		return credential{}, fmt.Errorf("%w: roles without a user", ErrNoRESTIdentity)
	}
	return credential{}, nil // anonymous
}

// sessionFor returns a session token of userID, minted once by POST
// /loginAs (master key) and reused.
func (s *Store) sessionFor(ctx context.Context, userID string) (string, error) {
	s.sessMu.Lock()
	tok, ok := s.sessions[userID]
	s.sessMu.Unlock()
	if ok {
		return tok, nil
	}
	if s.cfg.MasterKey == "" {
		return "", fmt.Errorf("%w: acting as user %s needs the master key", ErrNoRESTIdentity, userID)
	}
	var resp struct {
		SessionToken string `json:"sessionToken"`
	}
	err := s.do(ctx, request{method: http.MethodPost, path: "/loginAs", body: map[string]any{"userId": userID}, cred: master}, &resp)
	if err != nil && (errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrRateLimited) || ctx.Err() != nil) {
		return "", err
	}
	if err != nil {
		// Not wrapped: a user Parse Server does not know (101) must not
		// read as a missing object.
		return "", fmt.Errorf("%w: cannot open a session for user %s: %v", ErrNoRESTIdentity, userID, err)
	}
	if resp.SessionToken == "" {
		return "", fmt.Errorf("%w: Parse Server gave no session for user %s", store.ErrPermissionDenied, userID)
	}
	s.sessMu.Lock()
	s.sessions[userID] = resp.SessionToken
	s.sessMu.Unlock()
	return resp.SessionToken, nil
}

// forgetSession drops a cached token Parse Server no longer accepts.
func (s *Store) forgetSession(tok string) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	for u, t := range s.sessions {
		if t == tok {
			delete(s.sessions, u)
		}
	}
}

// call runs r as the identity of acl; a minted session Parse Server
// rejects (209: expired or revoked) is minted again once.
func (s *Store) call(ctx context.Context, acl query.ACLFilter, r request, out any) error {
	cred, err := s.credentialFor(ctx, acl)
	if err != nil {
		return err
	}
	r.cred = cred
	err = s.do(ctx, r, out)
	var ae *APIError
	minted := cred.token != "" && !isBound(ctx, cred.token)
	if minted && errors.As(err, &ae) && ae.Code == codeInvalidSessionToken {
		s.forgetSession(cred.token)
		if r.cred, err = s.credentialFor(ctx, acl); err != nil {
			return err
		}
		err = s.do(ctx, r, out)
	}
	return err
}

// isBound reports whether tok is the caller's own session (never minted
// again on its behalf: an expired caller session is the caller's problem).
func isBound(ctx context.Context, tok string) bool {
	b, ok := ctx.Value(sessionKey{}).(boundSession)
	return ok && b.token == tok
}
