/**
 * Escape attempts from a sandboxed MCP server (`executorSandbox` with a managed network whose
 * allow-list names one loopback port): nothing of ours is reachable from inside — not the
 * gateway VS Code's MCP client uses (a unix socket in our private directory: neither connectable
 * nor even visible), not the exec-server that runs it (its port on the host's loopback: refused by
 * the proxy, absent from the sandbox's own loopback), and "Allow" for a refused loopback port opens
 * that port only, never the rest of 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sandboxJson, type McpSandboxSettings } from '../../src/mcp/config';
import { McpGateway } from '../../src/mcp/gateway';
import type { McpServerManager } from '../../src/mcp/serverManager';
import type { SandboxBlock } from '../../src/mcp/serverSandbox';
import { configOf, listenText as listen, manager, NODE, startExecutor, text, type Executor } from './mcpFixtures';

const SERVER = join(__dirname, '..', 'helpers', 'mcpSandboxServer.js');

describe('escapes from a sandboxed MCP server', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  let exec: Executor;
  let allowed: Awaited<ReturnType<typeof listen>>;
  const ws = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-mcp-escape-')));
  before(async () => {
    exec = await startExecutor('ours');
    allowed = await listen('allowed-body');
  });
  after(async () => {
    await exec?.close();
    allowed?.server.close();
    rmSync(ws, { recursive: true, force: true });
  });

  test("the gateway's socket, our private directory and the exec-server's port are out of reach; Allow opens one port only", async () => {
    let sandbox: Record<string, unknown> = { policy: 'workspace-write', networkAllow: [`127.0.0.1:${allowed.port}`] };
    const config = () => configOf({ inmate: { command: NODE, args: [SERVER], cwd: ws, executorSandbox: sandbox } });
    const m: McpServerManager = manager(exec.host, {
      saveSandbox: (_s, settings: McpSandboxSettings) => {
        sandbox = sandboxJson(settings);
        m.applyConfig(config());
        return Promise.resolve();
      },
    });
    const gateway = new McpGateway(m);
    try {
      const socket = await gateway.listen();
      m.applyConfig(config());
      const s = m.get('inmate')!;
      const blocks: SandboxBlock[] = [];
      s.onDidBlock((b) => blocks.push(b));
      await s.start();
      assert.equal(s.state.kind, 'ready', s.describe());
      // Sanity: the sandbox lets the listed port through, so what fails below fails for the sandbox's reasons.
      assert.match(text(await s.callTool('fetch', { url: `http://127.0.0.1:${allowed.port}/` })), /status 200: allowed-body/);

      const attack = async () => {
        // 1. Drive our servers through the gateway VS Code uses: a unix socket cannot even be made in here.
        const reach = await s.callTool('reach', { path: socket });
        assert.doesNotMatch(text(reach), /^connected/, 'the gateway socket answered from inside the sandbox');
        // 2. Our private directory (the gateway's folder, tokens, FIFOs) is not visible.
        const listed = await s.callTool('list', { path: dirname(socket) });
        assert.doesNotMatch(text(listed), /"s"/, `the gateway's folder is visible: ${text(listed)}`);
        // 3. The exec-server's own port on the host's loopback: through the proxy refused, directly not there.
        const port = new URL(exec.server.url).port;
        const viaProxy = await s.callTool('fetch', { url: `http://127.0.0.1:${port}/` });
        assert.match(text(viaProxy), /status 403/, text(viaProxy));
        const direct = await s.callTool('fetch', { url: `http://127.0.0.1:${port}/`, direct: true });
        assert.match(text(direct), /fetch failed/, text(direct));
        return port;
      };
      const port = await attack();
      const refused = blocks.find((b) => b.kind === 'host' && b.target === `127.0.0.1:${port}`);
      assert.ok(refused, `the refusal is reported: ${JSON.stringify(blocks)}`);

      // "Allow" for a refused loopback port of something else opens that port, not 127.0.0.1 as a whole.
      const other = await listen('other-body');
      try {
        await s.callTool('fetch', { url: `http://127.0.0.1:${other.port}/` });
        const b = blocks.find((x) => x.kind === 'host' && x.target === `127.0.0.1:${other.port}`)!;
        assert.ok(b);
        await m.allowBlocked('inmate', b);
        assert.deepEqual(sandbox['networkAllow'], [`127.0.0.1:${allowed.port}`, `127.0.0.1:${other.port}`]);
        assert.equal(s.state.kind, 'ready', s.describe());
        assert.match(text(await s.callTool('fetch', { url: `http://127.0.0.1:${other.port}/` })), /status 200: other-body/);
        await attack();
      } finally {
        other.server.close();
      }
    } finally {
      await gateway.dispose();
      await m.shutdown();
    }
  });
});
