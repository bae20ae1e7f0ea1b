package mcpserver

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// The SDK hands a request's auth.TokenInfo to the method handlers
// (RequestExtra.TokenInfo), and binds a session to TokenInfo.UserID, but
// sets it only through auth.RequireBearerToken. withTokenInfo and
// carryTokenInfo route the resolved agent through that middleware: the
// request is cloned with a placeholder bearer token, the verifier returns
// the TokenInfo from the context, and the client's own Authorization
// header is put back before the SDK reads the request.
type tokenCarry struct {
	info *auth.TokenInfo
	// authz is the client's Authorization header (nil when absent).
	authz []string
}

type tokenCarryKey struct{}

const placeholderBearer = "Bearer parsemcp-resolved"

func withTokenInfo(r *http.Request, ti *auth.TokenInfo) *http.Request {
	c := &tokenCarry{info: ti, authz: r.Header.Values("Authorization")}
	r = r.Clone(context.WithValue(r.Context(), tokenCarryKey{}, c))
	r.Header.Set("Authorization", placeholderBearer)
	return r
}

func carryTokenInfo(next http.Handler) http.Handler {
	restore := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(tokenCarryKey{}).(*tokenCarry); ok {
			if c.authz == nil {
				r.Header.Del("Authorization")
			} else {
				r.Header["Authorization"] = c.authz
			}
		}
		next.ServeHTTP(w, r)
	})
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if c, ok := ctx.Value(tokenCarryKey{}).(*tokenCarry); ok {
			return c.info, nil
		}
		return nil, auth.ErrInvalidToken
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(restore)
}
