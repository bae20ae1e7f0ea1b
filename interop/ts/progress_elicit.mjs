// The official TypeScript MCP SDK client against a parsemcp server over
// Streamable HTTP: progress notifications on a long call, and human
// approval of destructive calls through elicitation.
// Usage: node progress_elicit.mjs MCP_URL ID_TO_APPROVE ID_TO_DECLINE
// Prints one JSON report on stdout; exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, approveId, declineId] = process.argv.slice(2);
if (!url || !approveId || !declineId) {
  console.error("usage: node progress_elicit.mjs MCP_URL ID_TO_APPROVE ID_TO_DECLINE");
  process.exit(64);
}

const client = new Client({ name: "parsemcp-interop-ts", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const asked = [];
let answer = "accept";
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push({ message: req.params.message, schema: req.params.requestedSchema });
  return answer === "accept" ? { action: "accept", content: { approve: true } } : { action: "decline" };
});

const transport = new StreamableHTTPClientTransport(new URL(url));
const text = (r) => JSON.parse(r.content[0]?.text ?? "null");
try {
  await client.connect(transport);
  const progress = { slow: [], reporting: [] };
  for (const name of ["slow", "reporting"]) {
    const res = await client.callTool({ name, arguments: {} }, undefined, {
      onprogress: (p) => progress[name].push(p),
    });
    if (res.isError) throw new Error(`${name}: ${res.content[0]?.text}`);
  }
  const approved = await client.callTool({ name: "delete_object", arguments: { class_name: "Ticket", object_id: approveId } });
  answer = "decline";
  const declined = await client.callTool({ name: "delete_object", arguments: { class_name: "Ticket", object_id: declineId } });
  const report = {
    protocolVersion: transport.protocolVersion ?? null,
    progress,
    asked,
    approved: { isError: approved.isError ?? false, result: text(approved) },
    declined: { isError: declined.isError ?? false, result: text(declined) },
  };
  process.stdout.write(JSON.stringify(report));
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (err) {
  console.error("interop client failed:", err);
  process.exit(1);
}
