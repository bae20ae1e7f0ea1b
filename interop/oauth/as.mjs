// A real OAuth 2.1 authorization server for the tests (npm oidc-provider):
// it issues access tokens, bound to the resource the client asks for
// (RFC 8707), by the client-credentials grant: JWTs, or opaque tokens that
// a resource server checks at its introspection endpoint (RFC 7662,
// /token/introspection; any client here may introspect) and that can be
// revoked (RFC 7009, /token/revocation). Each client stands for one
// person: its tokens carry that person's claims.
//
// usage: node as.mjs PEOPLE_JSON
//   PEOPLE_JSON: {"<client_id>": {"secret": "...", "scope": "...", "claims": {...},
//                 "format": "jwt"|"opaque", "ttl": seconds}, ...}
// It prints one JSON line {"issuer": "http://127.0.0.1:PORT"} once it listens.
import http from 'node:http';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const people = JSON.parse(process.argv[2] ?? '{}');
const key = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
key.kid = 'test-key';
key.alg = 'ES256';
key.use = 'sig';

let handler = (req, res) => { res.statusCode = 503; res.end(); };
const server = http.createServer((req, res) => handler(req, res));
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: Object.entries(people).map(([id, p]) => ({
      client_id: id,
      client_secret: p.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: p.scope,
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
    })),
    jwks: { keys: [key] },
    scopes: ['parse:read', 'parse:write'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => {
          const p = people[client.clientId] ?? {};
          const info = {
            scope: 'parse:read parse:write',
            audience: resource,
            accessTokenTTL: p.ttl ?? 600,
            accessTokenFormat: p.format ?? 'jwt',
          };
          if (info.accessTokenFormat === 'jwt') info.jwt = { sign: { alg: 'ES256' } };
          return info;
        },
      },
    },
    extraTokenClaims: (ctx, token) => people[token.clientId]?.claims ?? {},
  });
  provider.proxy = false;
  handler = provider.callback();
  process.stdout.write(JSON.stringify({ issuer }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
