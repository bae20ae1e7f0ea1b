// The official TypeScript MCP SDK client against a parsemcp server over
// Streamable HTTP. Usage: node client.mjs http://127.0.0.1:PORT/mcp
// Prints one JSON report on stdout; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node client.mjs MCP_URL");
  process.exit(64);
}

const client = new Client({ name: "parsemcp-interop-ts", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
  const tools = await client.listTools();
  const query = await client.callTool({
    name: "query_class",
    arguments: { class_name: "Ticket", where: { status: "open" }, order: "createdAt", limit: 2 },
  });
  const bad = await client.callTool({ name: "query_class", arguments: { class_name: "NoSuchClass" } });
  const report = {
    protocolVersion: transport.protocolVersion ?? null,
    serverName: client.getServerVersion()?.name,
    tools: tools.tools.map((t) => ({ name: t.name, category: t._meta?.category })),
    query: { isError: query.isError ?? false, structured: JSON.parse(query.content[0]?.text ?? "null"), text: query.content[0]?.text },
    bad: { isError: bad.isError ?? false, text: bad.content[0]?.text },
  };
  process.stdout.write(JSON.stringify(report));
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (err) {
  console.error("interop client failed:", err);
  process.exit(1);
}
