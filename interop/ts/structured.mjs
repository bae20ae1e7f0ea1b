// The official TypeScript MCP SDK client calls tools whose outputSchema it
// read from tools/list: the SDK validates each result's structuredContent
// against that schema (and refuses a result without one), so a call that
// returns is one the client accepted. Usage:
//   node structured.mjs http://127.0.0.1:PORT/mcp '[{"name":…,"arguments":{…}},…]'
// Prints one JSON report on stdout; exits non-zero when it cannot connect.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, callsJSON] = process.argv.slice(2);
if (!url || !callsJSON) {
  console.error("usage: node structured.mjs MCP_URL CALLS_JSON");
  process.exit(64);
}

const client = new Client({ name: "parsemcp-structured", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
  const tools = await client.listTools();
  const calls = [];
  for (const c of JSON.parse(callsJSON)) {
    try {
      const res = await client.callTool(c);
      const text = res.content?.[0]?.text ?? "";
      calls.push({
        tool: c.name,
        isError: res.isError ?? false,
        structured: res.structuredContent !== undefined,
        sameAsText: JSON.stringify(res.structuredContent) === JSON.stringify(JSON.parse(text || "null")),
      });
    } catch (err) {
      calls.push({ tool: c.name, refused: String(err?.message ?? err) });
    }
  }
  process.stdout.write(JSON.stringify({
    protocolVersion: transport.protocolVersion ?? null,
    tools: tools.tools.map((t) => ({ name: t.name, title: t.title ?? "", outputType: t.outputSchema?.type ?? "" })),
    calls,
  }));
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (err) {
  console.error("structured client failed:", err);
  process.exit(1);
}
