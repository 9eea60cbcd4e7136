// critique_client.mjs drives a Thoughtbox server from the TypeScript MCP SDK
// (npm @modelcontextprotocol/sdk), as a client in another language would:
// it launches the server over stdio, records two thoughts, the second with
// critique: true, and answers the server's sampling request with a scripted
// model. It prints one JSON document on stdout for the Go test to check:
// the server's name, the critique reply, and the sampling requests it
// received.
//
//   node critique_client.mjs <thoughtbox binary> serve --transport stdio
//
// THOUGHTBOX_DATA_DIR and the rest of the environment are passed on.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const critiqueText =
  "The conclusion rests on one benchmark run; repeat it on a cold cache before removing the index.";
const criticModel = "ts-scripted-critic";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node critique_client.mjs <thoughtbox binary> serve --transport stdio");
  process.exit(2);
}

const client = new Client(
  { name: "ts-sdk-agent", version: "0.9.0" },
  { capabilities: { sampling: {} } },
);

const samplingRequests = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  samplingRequests.push(request.params);
  return {
    role: "assistant",
    model: criticModel,
    stopReason: "endTurn",
    content: { type: "text", text: critiqueText },
  };
});

// The SDK passes only a few variables to the server by default; the server
// needs THOUGHTBOX_DATA_DIR.
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
await client.connect(transport);

async function gateway(operation, args) {
  const res = await client.callTool({ name: "thoughtbox_gateway", arguments: { operation, args } });
  const text = res.content.map((c) => c.text ?? "").join("\n");
  if (res.isError) {
    throw new Error(`${operation} failed: ${text}`);
  }
  return res.content[0].text;
}

try {
  await gateway("start_new", { sessionTitle: "Index removal review" });
  await gateway("cipher", {});
  await gateway("thought", {
    thought: "S1|O|The users.email index costs 12% of write throughput",
    nextThoughtNeeded: true,
  });
  const reply = JSON.parse(
    await gateway("thought", {
      thought: "S2|C|S1|Drop the index: reads barely changed in the benchmark",
      nextThoughtNeeded: false,
      critique: true,
    }),
  );
  console.log(
    JSON.stringify({
      serverName: client.getServerVersion()?.name ?? null,
      reply,
      samplingRequests,
    }),
  );
} finally {
  await client.close();
}
