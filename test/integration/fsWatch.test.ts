/**
 * File watches (`execBridge/fsWatch`, docs/protocol-extensions.md "File watches") against a real
 * server of ours: negotiated in `initialize`, events for a tree (coalesced; new directories
 * followed; excludes; the fs sandbox), bounds, watches that end with the connection and are made
 * again after a resume; and against the real `codex exec-server`, which has none: nothing is sent,
 * and the provider's changes come from polling.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ExecServerClient, websocketConnector } from '../../src/client';
import { FsWatchClient, type FsWatchEvent } from '../../src/client/fsWatch';
import { DEFAULT_POLL_LIMITS, ExecutorChanges, type FileChange } from '../../src/core/executorChanges';
import { ExecutorFiles } from '../../src/core/executorFiles';
import { FS_WATCH_FIELD } from '../../src/protocol/fsWatch';
import type { SandboxContextInput } from '../../src/protocol/sandbox';
import { ExecServer } from '../../src/server/execServer';
import { FaultProxy } from '../helpers/faultProxy';
import { startExecServer, type ExecServerProcess } from '../helpers/servers';
import { recording } from './clientHelpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => T | undefined | false, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Every event a watch client hears, flattened to `type path-below-root`. */
function collect(w: FsWatchClient, root: string) {
  const events: FsWatchEvent[] = [];
  w.onDidChange((e) => events.push(e));
  const seen = () => events.flatMap((e) => e.changes.map((c) => `${c.type} ${c.path.slice(root.length)}`));
  return { events, seen };
}

describe('file watches on our server', () => {
  let server: ExecServer;
  let url: string;
  let dir: string;
  before(async () => {
    server = new ExecServer({ fsWatchLimits: { maxWatches: 8, maxDirectories: 40, coalesceMs: 50, maxChanges: 200 } });
    url = await server.listen('127.0.0.1', 0);
    dir = fs.mkdtempSync(join(tmpdir(), 'eb-watch-'));
  });
  after(async () => {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const connect = (extra: { fsWatch?: boolean } = {}) =>
    ExecServerClient.connect({ endpoint: { kind: 'websocket', url }, keepalive: false, ...extra });

  test('negotiated in initialize: the result carries the bounds; a client that did not ask cannot watch', async () => {
    const asking = await connect();
    assert.deepEqual(asking.fsWatchLimits, { maxWatches: 8, maxDirectories: 40, coalesceMs: 50, maxChanges: 200 });
    asking.dispose();
    const plain = await connect({ fsWatch: false });
    assert.equal(plain.fsWatchLimits, undefined);
    await assert.rejects(
      plain.call('execBridge/fsWatch', { watchId: 'x', path: pathToFileURL(dir).href, recursive: false }),
      /file watches are not enabled on this connection/,
    );
    plain.dispose();
  });

  test('a recursive watch reports creates, changes and deletes below it, in new directories too, coalesced, excludes left out', async () => {
    const root = join(dir, 'tree');
    fs.mkdirSync(join(root, 'a', 'b'), { recursive: true });
    fs.mkdirSync(join(root, 'node_modules', 'pkg'), { recursive: true });
    fs.writeFileSync(join(root, 'a', 'b', 'deep.txt'), 'v1');
    const client = await connect();
    const watches = new FsWatchClient(client);
    const { events, seen } = collect(watches, root);
    try {
      const w = watches.watch({ path: root, recursive: true, excludes: ['node_modules'] });
      await w.ready;
      assert.equal(w.covered, true);
      assert.deepEqual(w.result, { watchId: w.result!.watchId, directories: 3, truncated: false }, 'root, a, a/b (not node_modules)');
      // A burst of writes to one file: a handful of notifications, each naming the file once.
      for (let i = 0; i < 100; i++) fs.appendFileSync(join(root, 'a', 'b', 'deep.txt'), `line ${i}\n`);
      await until('the change of deep.txt', () => seen().includes('changed /a/b/deep.txt'));
      await sleep(200);
      assert.ok(events.length <= 4, `${events.length} notifications for 100 writes`);
      assert.ok(events.every((e) => e.changes.filter((c) => c.path.endsWith('deep.txt')).length <= 1));
      events.length = 0;
      // A directory made after the watch is watched too.
      fs.mkdirSync(join(root, 'late'));
      await until('the new directory', () => seen().includes('created /late'));
      await sleep(100);
      fs.writeFileSync(join(root, 'late', 'inside.txt'), 'x');
      await until('a file in the new directory', () => seen().includes('created /late/inside.txt'));
      fs.rmSync(join(root, 'a'), { recursive: true });
      await until('the deleted tree', () => seen().includes('deleted /a'));
      fs.writeFileSync(join(root, 'node_modules', 'pkg', 'index.js'), 'ignored');
      fs.writeFileSync(join(root, 'node_modules', 'top.js'), 'ignored too');
      fs.mkdirSync(join(root, 'node_modules2'));
      await until('a sibling of the excluded directory', () => seen().includes('created /node_modules2'));
      await sleep(200);
      assert.equal(
        seen().some((s) => s.includes('node_modules/')),
        false,
        'nothing from an excluded directory',
      );
    } finally {
      watches.dispose();
      client.dispose();
    }
  });

  test('a file watch follows the file through an atomic replace and reports nothing else of its directory', async () => {
    const root = join(dir, 'single');
    fs.mkdirSync(root);
    const file = join(root, 'doc.txt');
    fs.writeFileSync(file, 'one');
    const client = await connect();
    const watches = new FsWatchClient(client);
    const { seen } = collect(watches, root);
    try {
      await watches.watch({ path: file, recursive: false }).ready;
      fs.writeFileSync(join(root, 'other.txt'), 'not watched');
      fs.writeFileSync(join(root, 'doc.txt.tmp'), 'two');
      fs.renameSync(join(root, 'doc.txt.tmp'), file);
      await until('the replaced file', () => seen().some((s) => s.endsWith(' /doc.txt')));
      fs.writeFileSync(file, 'three, in place');
      await until('its change', () => seen().includes('changed /doc.txt'));
      await sleep(150);
      assert.deepEqual(
        seen().filter((s) => !s.endsWith(' /doc.txt')),
        [],
      );
    } finally {
      watches.dispose();
      client.dispose();
    }
  });

  test('the fs sandbox applies: a denied directory cannot be watched, and nothing of it is reported from a watch above it', async () => {
    const root = join(dir, 'sandboxed');
    const secret = join(root, 'secret');
    fs.mkdirSync(secret, { recursive: true });
    const uri = (p: string) => pathToFileURL(p).href;
    const sandbox: SandboxContextInput = {
      cwd: uri(root),
      windowsSandboxLevel: 'disabled',
      permissions: {
        type: 'managed',
        file_system: {
          type: 'restricted',
          entries: [
            { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
            { path: { type: 'path', path: uri(secret) }, access: 'deny' },
          ],
        },
        network: 'restricted',
      },
    };
    const client = await connect();
    const watches = new FsWatchClient(client);
    const { seen } = collect(watches, root);
    try {
      await assert.rejects(
        client.call('execBridge/fsWatch', { watchId: 'denied', path: uri(secret), recursive: true, sandbox }),
        /Permission denied/,
      );
      const w = watches.watch({ path: root, recursive: true, sandbox });
      await w.ready;
      assert.equal(w.result?.directories, 1, 'the denied directory is not watched');
      fs.writeFileSync(join(secret, 'key'), 'hidden');
      fs.writeFileSync(join(root, 'open.txt'), 'visible');
      await until('the visible file', () => seen().includes('created /open.txt'));
      await sleep(150);
      assert.equal(
        seen().some((s) => s.includes('secret/')),
        false,
      );
    } finally {
      watches.dispose();
      client.dispose();
    }
  });

  test('bounded per connection: watches and directories; a tree over the bound is truncated', async () => {
    const big = join(dir, 'big');
    for (let i = 0; i < 60; i++) fs.mkdirSync(join(big, `d${i}`), { recursive: true });
    await until('earlier connections to let their watches go', () => server.watchedDirectories === 0 || undefined);
    const client = await connect();
    try {
      const r = await client.call('execBridge/fsWatch', { watchId: 'big', path: pathToFileURL(big).href, recursive: true });
      assert.deepEqual(r, { watchId: 'big', directories: 40, truncated: true });
      assert.equal(server.watchedDirectories, 40);
      await assert.rejects(
        client.call('execBridge/fsWatch', { watchId: 'big', path: pathToFileURL(dir).href, recursive: false }),
        /already in use/,
      );
      for (let i = 1; i < 8; i++)
        await client.call('execBridge/fsWatch', { watchId: `w${i}`, path: pathToFileURL(dir).href, recursive: false });
      await assert.rejects(
        client.call('execBridge/fsWatch', { watchId: 'w9', path: pathToFileURL(dir).href, recursive: false }),
        /too many file watches on this connection \(limit 8\)/,
      );
      await client.call('execBridge/fsUnwatch', { watchId: 'big' });
      await client.call('execBridge/fsUnwatch', { watchId: 'big' }); // idempotent
      assert.equal(server.watchedDirectories, 0, 'the last 7 watches hit the directory bound: they watch nothing');
    } finally {
      client.dispose();
    }
  });

  test('watches end with their connection; after a resume they are made again and events flow on the new connection', async () => {
    const root = join(dir, 'resumed');
    fs.mkdirSync(root);
    await until('earlier connections to let their watches go', () => server.watchedDirectories === 0 || undefined);
    const proxy = await FaultProxy.forUrl(url);
    const client = await ExecServerClient.connect({
      endpoint: { kind: 'websocket', url: proxy.url },
      keepalive: { intervalMs: 200, timeoutMs: 400 },
      attemptTimeoutMs: 1000,
      deadlineMs: 15_000,
    });
    const watches = new FsWatchClient(client);
    const { seen } = collect(watches, root);
    let reconnects = 0;
    watches.onDidReconnect(() => reconnects++);
    try {
      const w = watches.watch({ path: root, recursive: true });
      await w.ready;
      assert.equal(server.watchedDirectories, 1);
      proxy.cut();
      await until('the resume', () => client.state.kind === 'connected' && reconnects === 1);
      await w.ready;
      assert.equal(w.covered, true);
      // The old connection's watch ended with it (else 2), the new one's is there.
      await until('one watched directory', () => server.watchedDirectories === 1 || undefined);
      await sleep(300);
      assert.equal(server.watchedDirectories, 1, 'made again, once');
      fs.writeFileSync(join(root, 'after.txt'), 'x');
      await until('an event on the new connection', () => seen().includes('created /after.txt'));
      watches.dispose();
      await until('the unwatch', () => server.watchedDirectories === 0 || undefined);
    } finally {
      watches.dispose();
      client.dispose();
      await proxy.close();
    }
  });
});

describe('file watches against codex exec-server (none): polling instead', () => {
  let server: ExecServerProcess;
  let dir: string;
  before(async () => {
    server = await startExecServer('codex');
    dir = fs.mkdtempSync(join(tmpdir(), 'eb-watch-codex-'));
  });
  after(async () => {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('codex does not answer the field; nothing of watches is sent; an expanded folder changed there is found by polling', async () => {
    const sent: string[] = [];
    const client = await ExecServerClient.connect({ connector: recording(websocketConnector(server.url), sent), keepalive: false });
    const watches = new FsWatchClient(client);
    const files = new ExecutorFiles(async () => client);
    const got: FileChange[] = [];
    const changes = new ExecutorChanges(files, {
      canPoll: () => client.state.kind === 'connected',
      source: () => watches,
      limits: { ...DEFAULT_POLL_LIMITS, intervalMs: 100 },
    });
    changes.onDidChange((c) => got.push(...c));
    try {
      const init = JSON.parse(sent.find((t) => t.includes('"initialize"'))!) as { params: Record<string, unknown> };
      assert.equal(init.params[FS_WATCH_FIELD], true, 'our client asks');
      assert.equal(client.fsWatchLimits, undefined, 'codex does not offer watches');
      assert.equal(watches.supported, false);
      fs.mkdirSync(join(dir, 'sub', 'deeper'), { recursive: true });
      changes.connected();
      changes.watch(dir, { recursive: true });
      changes.listed(
        join(dir, 'sub', 'deeper'),
        (await files.readDirectory(join(dir, 'sub', 'deeper'))).map((e) => e.fileName),
      );
      fs.writeFileSync(join(dir, 'sub', 'deeper', 'new.txt'), 'n');
      await until('the new file, by polling', () =>
        got.some((c) => c.type === 'created' && c.path === join(dir, 'sub', 'deeper', 'new.txt')),
      );
      assert.equal(
        sent.some((t) => t.includes('execBridge/fsWatch')),
        false,
        'no watch request reached codex',
      );
    } finally {
      changes.dispose();
      watches.dispose();
      client.dispose();
    }
  });
});
