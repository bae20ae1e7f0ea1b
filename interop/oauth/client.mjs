// The official TypeScript SDK client signs in to parsemcp at the
// authorization server its protected-resource metadata names (client
// credentials, one client per person) and reports what the person sees.
//
// usage: node client.mjs MCP_URL CLIENT_ID CLIENT_SECRET SCOPE ISSUER
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [url, clientId, clientSecret, scope, expectedIssuer] = process.argv.slice(2);
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope, expectedIssuer });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
const client = new Client({ name: 'oauth-interop', version: '1.0.0' });
const report = { clientId };
try {
  await client.connect(transport);
  const text = (r) => JSON.parse(r.content[0].text);
  report.projects = text(await client.callTool({ name: 'query_class', arguments: { class_name: 'Project', keys: 'name', order: 'name' } }))
    .results.map((p) => p.name);
  report.count = text(await client.callTool({ name: 'count_objects', arguments: { class_name: 'Project' } })).count;
  const parts = authProvider.tokens().access_token.split('.');
  report.tokenFormat = parts.length === 3 ? 'jwt' : 'opaque';
  if (parts.length === 3) report.tokenAudience = JSON.parse(Buffer.from(parts[1], 'base64url').toString()).aud;
  await client.close();
} catch (e) {
  report.error = String(e?.message ?? e);
}
process.stdout.write(JSON.stringify(report) + '\n');
