package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
)

// MetadataURL is where this resource's metadata is: the well-known path
// on the resource's origin with the resource's path appended (RFC 9728 §3.1).
func (c Config) MetadataURL() string {
	u, err := url.Parse(c.Resource)
	if err != nil {
		return ""
	}
	p := u.Path
	if p == "/" {
		p = ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath + p
}

// Challenge is the WWW-Authenticate value of a 401: it points the client
// to the metadata, and says invalid_token when a token was refused.
func (c Config) Challenge(tokenRefused bool) string {
	v := `Bearer resource_metadata="` + c.MetadataURL() + `"`
	if tokenRefused {
		v += `, error="invalid_token"`
	}
	return v
}

// MetadataHandler serves the protected-resource metadata (RFC 9728).
func (c Config) MetadataHandler() http.Handler {
	doc := map[string]any{
		"resource":                 c.Resource,
		"authorization_servers":    []string{c.Issuer},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "parsemcp",
	}
	if len(c.ScopesSupported) > 0 {
		doc["scopes_supported"] = c.ScopesSupported
	}
	body, _ := json.Marshal(doc)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(body)
	})
}
