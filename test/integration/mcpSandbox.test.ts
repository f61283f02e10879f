/**
 * Sandboxed MCP servers (`executorSandbox`) on our exec-server with the real sandbox (bubblewrap,
 * the managed network's proxy): a server that fetches from two HTTP servers on 127.0.0.1, one on
 * its allow-list; the refusal of the other is reported while the server runs, with the host (tree
 * data, the log, `onDidBlock`); "Allow" writes the configuration and restarts the server, and the
 * next call gets through. A write outside the workspace is reported as blocked, with its path.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { McpConfig, McpSandboxSettings } from '../../src/mcp/config';
import { sandboxJson } from '../../src/mcp/config';
import type { SandboxBlock } from '../../src/mcp/serverSandbox';
import type { McpServerManager } from '../../src/mcp/serverManager';
import { McpTreeModel } from '../../src/mcp/treeModel';
import { configOf, listenText as listen, manager, NODE, startExecutor, text, waitForState, type Executor } from './mcpFixtures';

const SERVER = join(__dirname, '..', 'helpers', 'mcpSandboxServer.js');

describe(
  'sandboxed MCP servers on ours exec-server',
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    let exec: Executor;
    let allowed: { server: Server; port: number };
    let other: { server: Server; port: number };
    const ws = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-mcp-sandbox-')));
    before(async () => {
      exec = await startExecutor('ours');
      allowed = await listen('allowed-body');
      other = await listen('other-body');
    });
    after(async () => {
      await exec?.close();
      allowed?.server.close();
      other?.server.close();
      rmSync(ws, { recursive: true, force: true });
    });

    test('a refused host is reported with the host while the server runs; Allow writes the config, restarts, and the next call works', async () => {
      let sandbox: McpSandboxSettings | Record<string, unknown> = {
        policy: 'workspace-write',
        networkAllow: [`127.0.0.1:${allowed.port}`],
      };
      const config = (): McpConfig => configOf({ fetcher: { command: NODE, args: [SERVER], cwd: ws, executorSandbox: sandbox } });
      const saved: McpSandboxSettings[] = [];
      const m: McpServerManager = manager(exec.host, {
        saveSandbox: (_server, settings) => {
          saved.push(settings);
          sandbox = sandboxJson(settings);
          m.applyConfig(config());
          return Promise.resolve();
        },
      });
      const tree = new McpTreeModel(m);
      try {
        m.applyConfig(config());
        const s = m.get('fetcher')!;
        const blocks: SandboxBlock[] = [];
        s.onDidBlock((b) => blocks.push(b));
        await s.start();
        assert.equal(s.state.kind, 'ready', s.describe());
        assert.ok(
          s.log.all().some((e) => e.text.includes(`sandbox: workspace-write, network only 127.0.0.1:${allowed.port}`)),
          'the log names the sandbox',
        );

        const ok = await s.callTool('fetch', { url: `http://127.0.0.1:${allowed.port}/` });
        assert.match(text(ok), /status 200: allowed-body/);
        assert.equal(blocks.length, 0);

        const refused = await s.callTool('fetch', { url: `http://127.0.0.1:${other.port}/` });
        assert.match(text(refused), /status 403/);
        assert.equal(blocks.length, 1, 'reported while the server runs, not at its exit');
        assert.deepEqual(
          { kind: blocks[0]!.kind, host: (blocks[0] as { host: string }).host, target: (blocks[0] as { target: string }).target },
          { kind: 'host', host: '127.0.0.1', target: `127.0.0.1:${other.port}` },
        );
        assert.equal(s.state.kind, 'ready', 'the server lives on');
        assert.ok(s.log.all().some((e) => e.text.includes(`the sandbox blocked 127.0.0.1:${other.port}`)));
        // The tree shows it under the server, with an Allow action.
        const node = tree.getChildren().find((n) => n.kind === 'server')!;
        const items = tree.getChildren(node).map((n) => tree.getItem(n));
        const blocked = items.find((i) => i.contextValue.startsWith('mcpBlocked;'));
        assert.ok(blocked, JSON.stringify(items));
        assert.match(blocked.label, new RegExp(`127\\.0\\.0\\.1:${other.port}`));
        assert.match(blocked.contextValue, /;canAllow;/);
        assert.match(tree.getItem(node).description ?? '', /sandboxed/);

        // A second refusal of the same destination is not a second report.
        await s.callTool('fetch', { url: `http://127.0.0.1:${other.port}/` });
        assert.equal(blocks.length, 1);

        await m.allowBlocked('fetcher', blocks[0]!);
        // A loopback destination is allowed with its port only (all of 127.0.0.1 would open every local service).
        assert.deepEqual(saved.at(-1)?.networkAllow, [`127.0.0.1:${allowed.port}`, `127.0.0.1:${other.port}`]);
        await waitForState(s, (st) => st.kind === 'ready', 30_000, 'ready after the restart');
        assert.ok(!s.stale, 'runs with the new configuration');
        assert.deepEqual(s.blocks, [], 'a fresh run starts with nothing blocked');
        const now = await s.callTool('fetch', { url: `http://127.0.0.1:${other.port}/` });
        assert.match(text(now), /status 200: other-body/);
      } finally {
        tree.dispose();
        await m.shutdown();
      }
    });

    test('a write outside the workspace is blocked and reported with its path; inside it works', async () => {
      const m = manager(exec.host);
      try {
        m.applyConfig(configOf({ writer: { command: NODE, args: [SERVER], cwd: ws, executorSandbox: 'workspace-write' } }));
        const s = m.get('writer')!;
        await s.start();
        assert.equal(s.state.kind, 'ready', s.describe());
        const inside = await s.callTool('write', { path: join(ws, 'inside.txt') });
        assert.match(text(inside), /wrote/);
        const outside = join(homedir(), `exec-bridge-mcp-sandbox-probe-${process.pid}`);
        const r = await s.callTool('write', { path: outside });
        assert.match(text(r), /read-only file system|EROFS/i);
        assert.ok(!existsSync(outside));
        assert.deepEqual(
          s.blocks.map((b) => (b.kind === 'path' ? b.path : b.target)),
          [outside],
        );
        // Without a managed network the network is off: nothing is reachable, and no host is reported.
        const net = await s.callTool('fetch', { url: `http://127.0.0.1:${allowed.port}/`, direct: true });
        assert.match(text(net), /fetch failed/);
      } finally {
        await m.shutdown();
      }
    });
  },
);
