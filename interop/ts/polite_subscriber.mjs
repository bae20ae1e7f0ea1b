// A polite subscriber through the official TypeScript MCP SDK client: one
// session (with the listening GET stream the SDK opens after initialize),
// one resources/subscribe, and a wait for the notification of a change.
// Usage:
//   node polite_subscriber.mjs MCP_URL TOKEN URI
// Prints "subscribed" on a line of its own once the subscription is made,
// then, when notifications/resources/updated arrives, one JSON report
// ({"updated": URI, "sessionId", "protocolVersion", "errors"}); exits
// non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, uri] = process.argv.slice(2);
if (!url || !token || !uri) {
  console.error("usage: node polite_subscriber.mjs MCP_URL TOKEN URI");
  process.exit(64);
}

const client = new Client({ name: "parsemcp-polite-subscriber", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const errors = [];
client.onerror = (err) => errors.push(String(err));
const updated = new Promise((resolve) => {
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri));
});

try {
  await client.connect(transport);
  await client.subscribeResource({ uri });
  process.stdout.write("subscribed\n");
  const got = await updated;
  process.stdout.write(JSON.stringify({ updated: got, sessionId: transport.sessionId, protocolVersion: transport.protocolVersion, errors }) + "\n");
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
