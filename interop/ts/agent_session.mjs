// An agent session through the official TypeScript MCP SDK client, as a
// model would run one over the demo data: tools/list, the query-language
// resource, get_schema, query_class paged through next_call, aggregate,
// export_data paged through next_call. Usage:
//   node agent_session.mjs http://127.0.0.1:PORT/mcp
// Prints one JSON report (every call with its result size) on stdout;
// exits non-zero on any failure. The SDK client validates each result's
// structuredContent against the outputSchema tools/list gave for its tool
// (and refuses a result without one): a call that returns is valid.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node agent_session.mjs MCP_URL");
  process.exit(64);
}

const client = new Client({ name: "parsemcp-agent-session", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
const calls = [];

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.[0]?.text ?? "";
  const body = JSON.parse(text || "null");
  // structuredContent is the text's JSON, not a second rendering of it.
  const structured = res.structuredContent !== undefined && JSON.stringify(res.structuredContent) === JSON.stringify(body);
  calls.push({ tool: name, bytes: Buffer.byteLength(text), isError: res.isError ?? false, body, structured });
  if (res.isError) throw new Error(`${name}: ${text}`);
  return body;
}

try {
  await client.connect(transport);
  const tools = await client.listTools();
  const catalogBytes = Buffer.byteLength(JSON.stringify(tools));
  const doc = await client.readResource({ uri: "parse://docs/query-language" });

  await call("get_schema", { class_name: "Ticket" });
  // Page through the open tickets by following next_call.
  const ids = [];
  let args = { class_name: "Ticket", where: { status: "open" }, order: "createdAt" };
  let pages = 0;
  for (; pages < 50; pages++) {
    const page = await call("query_class", args);
    for (const r of page.results) ids.push(r.objectId);
    if (!page.next_call) break;
    if (page.next_call.tool !== "query_class") throw new Error("next_call names " + page.next_call.tool);
    args = page.next_call.arguments;
  }
  const count = await call("count_objects", { class_name: "Ticket", where: { status: "open" } });
  await call("aggregate", {
    class_name: "Ticket",
    pipeline: [{ $group: { _id: "$status", n: { $sum: 1 } } }, { $sort: { n: -1 } }],
  });
  await call("group_by", { class_name: "Ticket", field: "priority" });
  // Export the comments with their ticket: two pages.
  let exp = await call("export_data", { class_name: "Comment", include: ["ticket"], limit: 5000 });
  const exportRows = [exp.row_count];
  if (exp.next_call) {
    exp = await call(exp.next_call.tool, exp.next_call.arguments);
    exportRows.push(exp.row_count);
  }

  process.stdout.write(JSON.stringify({
    catalogBytes,
    tools: tools.tools.length,
    described: tools.tools.filter((t) => t.title && t.outputSchema?.type === "object").length,
    docBytes: Buffer.byteLength(doc.contents[0]?.text ?? ""),
    docMime: doc.contents[0]?.mimeType,
    pages,
    ids,
    openCount: count.count,
    exportRows,
    calls: calls.map((c) => ({ tool: c.tool, bytes: c.bytes, isError: c.isError, truncated: c.body?.truncated ?? false, rows_left_out: c.body?.rows_left_out ?? 0, structured: c.structured })),
  }));
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (err) {
  console.error("agent session failed:", err);
  process.exit(1);
}
