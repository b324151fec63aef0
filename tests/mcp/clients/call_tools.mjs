// Calls an MCP server's tools with the official TypeScript SDK client, as Claude
// Code, Gemini CLI and opencode do, and prints what the client made of each call.
//
// stdin: {"transport": "stdio", "command": "...", "args": [...], "env": {...}}
//     or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "..."}
//   with "calls": [{"name": "create_handoff", "arguments": {...}}, ...]
// stdout: {"tools": [names], "results": [{"result": CallToolResult} | {"threw": {code, message}}]}
//
// tools/list comes first, as a real client's session does: the SDK keeps each
// tool's outputSchema from it and checks every later result against it (error
// results included), throwing -32602 where a result does not match.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const spec = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const transport =
  spec.transport === "stdio"
    ? new StdioClientTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        stderr: "inherit",
      })
    : new StreamableHTTPClientTransport(new URL(spec.url), {
        requestInit: { headers: { Authorization: `Bearer ${spec.token}` } },
      });

const client = new Client({ name: "amv-typescript-sdk-test", version: "1.0.0" });
await client.connect(transport);
const listed = await client.listTools();
const results = [];
for (const call of spec.calls) {
  try {
    results.push({ result: await client.callTool({ name: call.name, arguments: call.arguments }) });
  } catch (error) {
    results.push({ threw: { code: error.code ?? null, message: String(error.message ?? error) } });
  }
}
await client.close();
process.stdout.write(JSON.stringify({ tools: listed.tools.map((t) => t.name), results }) + "\n");
