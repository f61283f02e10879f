/**
 * The servers of a private network (not a test file): run by test/helpers/privateNetwork.ts inside
 * a network namespace of its own, where only the exec-server put in the same namespace can reach
 * them. On 127.0.0.1 there: a 2025-11-25 MCP server over Streamable HTTP (tools `shout` and
 * `announce`, the second sending a log message over the standalone SSE stream after it answered),
 * an HTTP+SSE-only one, and the OAuth authorization + MCP server of test/helpers/oauthTestServer.ts.
 * Prints their URLs as one JSON line, then answers one JSON line per command line on stdin
 * (`state`, `expire`, `isLive`); exits when stdin ends.
 */
import { createInterface } from 'node:readline';
import { announcingServer, startHttpMcpServer } from './mcpHttpServer';
import { startOAuthTestServer } from './oauthTestServer';

async function main(): Promise<void> {
  const mcp = await startHttpMcpServer({ server: announcingServer });
  const sse = await startHttpMcpServer({ sseOnly: true });
  const oauth = await startOAuthTestServer();
  const write = (v: unknown) => process.stdout.write(`${JSON.stringify(v)}\n`);
  write({ mcp: mcp.url, sse: sse.url, oauth: oauth.url, account: oauth.account });
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const cmd = JSON.parse(line) as { op: string; token?: string };
    if (cmd.op === 'expire') oauth.expireAccessTokens();
    write({
      mcp: { methods: mcp.methods(), openSessions: mcp.openSessions(), streams: mcp.streams() },
      sse: { methods: sse.methods(), openSessions: sse.openSessions(), streams: sse.streams() },
      oauth: { counts: oauth.counts(), revocations: oauth.revocations(), secrets: oauth.secrets() },
      ...(cmd.token !== undefined ? { live: oauth.isLive(cmd.token) } : {}),
    });
  });
  lines.once('close', () => {
    void Promise.all([mcp.close(), sse.close(), oauth.close()]).finally(() => process.exit(0));
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
