/**
 * Interop for fs/* (and http/request): one table of scenarios run over a real WebSocket against
 * our exec-server (`dist/cli.js serve`) and the real `codex exec-server` 0.171.0, each in its own
 * identically built temp tree; every answer (result or error code + message) must be the same.
 * Observations are normalized first: the tree's path becomes `<root>`, timestamps become what
 * they mean (`0` stays, a real time becomes `"time"`), directory listings are sorted (their order
 * is the OS's), `date` headers are dropped. Deliberate differences are asserted per side at the end.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { RawClient, startServer, type StartedServer, type WireMessage } from '../helpers/rawClient';

type Kind = 'ours' | 'codex';
const KINDS: readonly Kind[] = ['ours', 'codex'];

interface Target {
  kind: Kind;
  server: StartedServer;
  client: RawClient;
  root: string;
}

const targets = new Map<Kind, Target>();

/** The same tree for each server. */
function buildTree(root: string): void {
  const w = (rel: string, data: string) => fs.writeFileSync(join(root, rel), data);
  const dirs = ['dir/sub', 'wk/a/.hid/x', 'wk/b', 'cp/src/inner', 'rm/full/x', 'rm/emptyd'];
  for (const d of dirs) fs.mkdirSync(join(root, d), { recursive: true });
  w('f.txt', 'hello\n');
  w('dir/a.txt', 'x\n');
  w('dir/sub/b.txt', 'y\n');
  w('wk/b/f', '');
  w('cp/src/one', '1');
  w('cp/src/inner/two', '2');
  w('rm/full/x/z', 'z');
  w('rm/file', 'q');
  const links: Array<[string, string]> = [
    ['f.txt', 'link'],
    ['dir', 'dirlink'],
    ['nowhere', 'dangling'],
    ['loop2', 'wk/loop1'],
    ['loop1', 'wk/loop2'],
    ['..', 'wk/a/up'],
    ['../b', 'wk/a/tob'],
    ['/nonexistent', 'wk/dang'],
    ['one', 'cp/src/lnk'],
    ['/nonexistent', 'cp/src/dang'],
    ['full', 'rm/dlink'],
  ];
  for (const [target, at] of links) fs.symlinkSync(target, join(root, at));
  for (const fifo of ['fifo', 'wk/fifo', 'cp/src/ff']) execFileSync('mkfifo', [join(root, fifo)]);
  fs.writeFileSync(join(root, 'sparse.bin'), '');
  fs.truncateSync(join(root, 'sparse.bin'), 600 * 1024 * 1024);
}

/** `@/x` in any string of the params is the URI of `x` in the target's tree; `@` alone is the root. */
function resolveParams(value: unknown, root: string): unknown {
  if (typeof value === 'string' && value.startsWith('@')) {
    const rel = value.slice(1).replace(/^\//, '');
    // Percent escapes written in the table stay as written.
    return pathToFileURL(root).href + (rel ? `/${rel}` : '');
  }
  if (Array.isArray(value)) return value.map((v) => resolveParams(v, root));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveParams(v, root)]));
  return value;
}

function normalize(value: unknown, root: string, key = ''): unknown {
  if (typeof value === 'string')
    return root === '' ? value : value.split(pathToFileURL(root).href).join('<root>').split(root).join('<root>');
  if (typeof value === 'number' && (key === 'createdAtMs' || key === 'modifiedAtMs')) return value === 0 ? 0 : 'time';
  if (Array.isArray(value)) {
    const items = value.map((v) => normalize(v, root));
    // readDirectory order is the OS's, not part of the contract.
    if (key === 'entries' && items.every((e) => e && typeof e === 'object' && 'fileName' in e)) {
      items.sort((a, b) => String((a as { fileName: string }).fileName).localeCompare((b as { fileName: string }).fileName));
    }
    if (key === 'headers') return items.filter((h) => (h as { name: string }).name !== 'date');
    return items;
  }
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, root, k)]));
  return value;
}

function observe(m: WireMessage, root: string): unknown {
  return normalize(m.error ? { error: { code: m.error.code, message: m.error.message } } : { result: m.result }, root);
}

/**
 * `codeOnly`: only the error code is compared. Used for wrong JSON types, whose wording comes from
 * the shared params validation (protocol/describeError.ts), not from fs: the reference says
 * `invalid type: number, expected a string`, ours names the value and the field.
 */
type Step = [method: string, params: unknown, flags?: { codeOnly: true }];

/** Runs the steps in order on every server; returns the mismatches (empty when all agree). */
async function compare(steps: Step[]): Promise<{ mismatches: string[]; codex: unknown[] }> {
  const seen = new Map<Kind, unknown[]>();
  await Promise.all(
    KINDS.map(async (kind) => {
      const t = targets.get(kind)!;
      const out: unknown[] = [];
      for (const [method, params] of steps) out.push(observe(await t.client.call(method, resolveParams(params, t.root)), t.root));
      seen.set(kind, out);
    }),
  );
  const ours = seen.get('ours')!;
  const codex = seen.get('codex')!;
  const mismatches: string[] = [];
  steps.forEach(([method, params, flags], i) => {
    const code = (o: unknown) => (o as { error?: { code: number } }).error?.code;
    const same = flags?.codeOnly ? code(ours[i]) !== undefined && code(ours[i]) === code(codex[i]) : isDeepStrictEqual(ours[i], codex[i]);
    if (!same) {
      mismatches.push(`${method} ${JSON.stringify(params)}\n  ours:  ${JSON.stringify(ours[i])}\n  codex: ${JSON.stringify(codex[i])}`);
    }
  });
  return { mismatches, codex };
}

function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

async function agree(steps: Step[]): Promise<unknown[]> {
  const { mismatches, codex } = await compare(steps);
  assert.equal(mismatches.length, 0, `ours and codex differ:\n${mismatches.join('\n')}`);
  return codex;
}

before(async () => {
  await Promise.all(
    KINDS.map(async (kind) => {
      const root = fs.mkdtempSync(join(tmpdir(), `fs-interop-${kind}-`));
      buildTree(root);
      const server = await startServer(kind, [], { ...process.env, FS_INTEROP_TOKEN: 'sekrit' });
      const { client } = await RawClient.session(server.url);
      targets.set(kind, { kind, server, client, root });
    }),
  );
});

after(async () => {
  for (const t of targets.values()) {
    t.client.close();
    await t.server.stop();
    fs.rmSync(t.root, { recursive: true, force: true });
  }
});

describe('fs/* interop with codex exec-server', () => {
  test('path URIs', async () => {
    await agree([
      ['fs/readFile', { path: '/tmp/x' }],
      ['fs/readFile', { path: '' }],
      ['fs/readFile', { path: 'http://x/y' }],
      ['fs/readFile', { path: 'file://relative/x' }],
      ['fs/readFile', { path: '@/f.txt?x=1#frag' }],
      ['fs/readFile', { path: '@/f.txt#frag' }],
      ['fs/readFile', { path: '@/a%00b' }],
      ['fs/readFile', { path: '@/dir/%2e%2e/f.txt' }],
      ['fs/readFile', {}],
      ['fs/readFile', { path: 7 }, { codeOnly: true }],
    ]);
  });

  test('readFile and writeFile', async () => {
    const codex = await agree([
      ['fs/readFile', { path: '@/f.txt' }],
      ['fs/readFile', { path: '@/link' }],
      ['fs/readFile', { path: '@/dir' }],
      ['fs/readFile', { path: '@/fifo' }],
      ['fs/readFile', { path: '@/missing' }],
      ['fs/readFile', { path: '@/dangling' }],
      ['fs/readFile', { path: '@/f.txt/x' }],
      ['fs/readFile', { path: '@/sparse.bin' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 'aGk=' }],
      ['fs/readFile', { path: '@/w.txt' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: '' }],
      ['fs/readFile', { path: '@/w.txt' }],
      ['fs/writeFile', { path: '@/nodir/w.txt', dataBase64: 'aGk=' }],
      ['fs/writeFile', { path: '@/dir', dataBase64: 'aGk=' }],
      ['fs/writeFile', { path: '@/f.txt/x', dataBase64: 'aGk=' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 'a*k=' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 'aGk' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 'a' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 'aGl=' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 'aGk=aGk=' }],
      ['fs/writeFile', { path: '@/w.txt', dataBase64: 5 }, { codeOnly: true }],
      ['fs/writeFile', { path: '@/w.txt' }],
      ['fs/writeFile', { path: 'file://host/x', dataBase64: 'a*k=' }],
      ['fs/writeFile', { path: '@/sp%20ace%25.txt', dataBase64: 'cw==' }],
      ['fs/readFile', { path: '@/sp%20ace%25.txt' }],
    ]);
    // Not a vacuous agreement: the reference answered these.
    assert.deepEqual(codex[0], { result: { dataBase64: 'aGVsbG8K' } });
    assert.deepEqual(codex[4], { error: { code: -32004, message: 'No such file or directory (os error 2)' } });
  });

  test('createDirectory', async () => {
    await agree([
      ['fs/createDirectory', { path: '@/c1/c2' }],
      ['fs/createDirectory', { path: '@/c1/c2' }],
      ['fs/createDirectory', { path: '@/c1/c2', recursive: false }],
      ['fs/createDirectory', { path: '@/c3/c4', recursive: false }],
      ['fs/createDirectory', { path: '@/f.txt', recursive: true }],
      ['fs/createDirectory', { path: '@/f.txt', recursive: false }],
      ['fs/createDirectory', { path: '@/f.txt/sub' }],
      ['fs/createDirectory', { path: '@/dirlink' }],
      ['fs/createDirectory', { path: '@/link' }],
      ['fs/getMetadata', { path: '@/c1/c2' }],
    ]);
  });

  test('getMetadata, readDirectory, canonicalize', async () => {
    const codex = await agree([
      ['fs/getMetadata', { path: '@/f.txt' }],
      ['fs/getMetadata', { path: '@/dir' }],
      ['fs/getMetadata', { path: '@/link' }],
      ['fs/getMetadata', { path: '@/dirlink' }],
      ['fs/getMetadata', { path: '@/fifo' }],
      ['fs/getMetadata', { path: '@/dangling' }],
      ['fs/getMetadata', { path: '@/missing' }],
      ['fs/getMetadata', { path: '@/f.txt', followSymlinks: false }],
      ['fs/getMetadata', { path: '@/link', followSymlinks: false }],
      ['fs/getMetadata', { path: '@/dangling', followSymlinks: false }],
      ['fs/getMetadata', { path: '@/dirlink/a.txt', followSymlinks: false }],
      ['fs/getMetadata', { path: '@/dirlink/../f.txt', followSymlinks: false }],
      ['fs/getMetadata', { path: '@/nodir/x', followSymlinks: false }],
      ['fs/getMetadata', { path: '@/dir', followSymlinks: null }],
      ['fs/readDirectory', { path: '@' }],
      ['fs/readDirectory', { path: '@/dirlink' }],
      ['fs/readDirectory', { path: '@/f.txt' }],
      ['fs/readDirectory', { path: '@/missing' }],
      ['fs/canonicalize', { path: '@/dir/../link' }],
      ['fs/canonicalize', { path: '@/dirlink/' }],
      ['fs/canonicalize', { path: '@/missing' }],
      ['fs/canonicalize', { path: '@/f.txt/x' }],
    ]);
    assert.deepEqual(codex[2], {
      result: { isDirectory: false, isFile: true, isSymlink: true, size: 6, createdAtMs: 0, modifiedAtMs: 'time' },
    });
  });

  test('copy', async () => {
    await agree([
      ['fs/copy', { sourcePath: '@/cp/src/one', destinationPath: '@/cp/one.copy', recursive: false }],
      ['fs/copy', { sourcePath: '@/cp/src/one', destinationPath: '@/cp/one.copy', recursive: false }],
      ['fs/copy', { sourcePath: '@/cp/src/one', destinationPath: '@/cp/src', recursive: false }],
      ['fs/copy', { sourcePath: '@/cp/src/one', destinationPath: '@/cp/nodir/x', recursive: false }],
      ['fs/copy', { sourcePath: '@/cp/src/one', destinationPath: '@/cp/x' }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/dst', recursive: false }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/dst', recursive: true }],
      ['fs/readDirectory', { path: '@/cp/dst' }],
      ['fs/getMetadata', { path: '@/cp/dst/lnk' }],
      ['fs/readFile', { path: '@/cp/dst/inner/two' }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/dst', recursive: true }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/new/parents/dst', recursive: true }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/src', recursive: true }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/src/inner/deeper', recursive: true }],
      ['fs/copy', { sourcePath: '@/cp/src', destinationPath: '@/cp/one.copy', recursive: true }],
      ['fs/copy', { sourcePath: '@/cp/missing', destinationPath: '@/cp/m2', recursive: true }],
      ['fs/copy', { sourcePath: '@/cp/src/lnk', destinationPath: '@/cp/lnk.copy', recursive: false }],
      ['fs/getMetadata', { path: '@/cp/lnk.copy', followSymlinks: false }],
      ['fs/copy', { sourcePath: '@/cp/src/dang', destinationPath: '@/cp/dang.copy', recursive: false }],
      ['fs/copy', { sourcePath: '@/fifo', destinationPath: '@/cp/fifo.copy', recursive: false }],
      ['fs/copy', { sourcePath: '@/missing', destinationPath: 'file://host/x', recursive: false }],
    ]);
    for (const t of targets.values()) {
      assert.equal(fs.readlinkSync(join(t.root, 'cp/dang.copy')), '/nonexistent', t.kind);
      assert.equal(fs.existsSync(join(t.root, 'cp/dst/ff')), false, t.kind);
    }
  });

  test('remove', async () => {
    await agree([
      ['fs/remove', { path: '@/rm/missing' }],
      ['fs/remove', { path: '@/rm/missing', force: false }],
      ['fs/remove', { path: '@/rm/nodir/x', force: true }],
      ['fs/remove', { path: '@/rm/full', recursive: false }],
      ['fs/remove', { path: '@/rm/emptyd', recursive: false }],
      ['fs/remove', { path: '@/rm/dlink', recursive: true }],
      ['fs/getMetadata', { path: '@/rm/full' }],
      ['fs/remove', { path: '@/rm/file', recursive: false, force: false }],
      ['fs/remove', { path: '@/rm/full/x/z/q' }],
      ['fs/remove', { path: '@/rm/full' }],
      ['fs/readDirectory', { path: '@/rm' }],
    ]);
  });

  test('walk', async () => {
    const opts = (o: object = {}) => ({ maxDepth: 5, maxDirectories: 100, maxEntries: 1000, followDirectorySymlinks: false, ...o });
    const codex = await agree([
      ['fs/walk', { path: '@/wk', options: opts() }],
      ['fs/walk', { path: '@/wk', options: opts({ followDirectorySymlinks: true }) }],
      ['fs/walk', { path: '@/wk', options: opts({ followDirectorySymlinks: true, pruneHiddenDirectories: true }) }],
      ['fs/walk', { path: '@/wk/a/up', options: opts({ followDirectorySymlinks: true, maxDepth: 1 }) }],
      ['fs/walk', { path: '@/wk/a/up', options: opts() }],
      ['fs/walk', { path: '@/wk', options: opts({ maxDirectories: 1 }) }],
      ['fs/walk', { path: '@/wk', options: opts({ maxEntries: 7 }) }],
      ['fs/walk', { path: '@/wk', options: opts({ maxEntries: 8 }) }],
      ['fs/walk', { path: '@/wk', options: opts({ maxDepth: 0, maxDirectories: 1 }) }],
      ['fs/walk', { path: '@/wk', options: opts({ maxDirectories: 0 }) }],
      ['fs/walk', { path: '@/wk', options: opts({ maxDepth: 65 }) }],
      ['fs/walk', { path: '@/wk', options: opts({ maxEntries: 50001 }) }],
      ['fs/walk', { path: 'file://host/x', options: opts({ maxEntries: 0 }) }],
      ['fs/walk', { path: '@/wk/missing', options: opts() }],
      ['fs/walk', { path: '@/wk/loop1', options: opts() }],
      ['fs/walk', { path: '@/wk/b/f', options: opts() }],
      ['fs/walk', { path: '@/wk/b/f/x', options: opts() }],
      ['fs/walk', { path: '@/wk' }],
      ['fs/walk', { path: '@/wk', options: {} }],
      ['fs/walk', { path: '@/wk', options: opts({ followDirectorySymlinks: 'yes' }) }, { codeOnly: true }],
    ]);
    assert.equal((codex[1] as { result: { entries: unknown[] } }).result.entries.length, 7);
  });

  test('file handles', async () => {
    const long = 'abcdefghijabcdefghijabcdefghijabc';
    await agree([
      ['fs/open', { handleId: 'h1', path: '@/f.txt' }],
      ['fs/open', { handleId: 'h1', path: '@/f.txt' }],
      ['fs/open', { handleId: 'h1', path: '@/missing' }],
      ['fs/readBlock', { handleId: 'h1', offset: 0, len: 4 }],
      ['fs/readBlock', { handleId: 'h1', offset: 4, len: 100 }],
      ['fs/readBlock', { handleId: 'h1', offset: 100, len: 100 }],
      ['fs/readBlock', { handleId: 'h1', offset: 0, len: 6 }],
      ['fs/readBlock', { handleId: 'h1', offset: 0, len: 0 }],
      ['fs/readBlock', { handleId: 'h1', offset: 0, len: 1048577 }],
      ['fs/readBlock', { handleId: 'h1', offset: 0, len: 1048576 }],
      ['fs/writeBlock', { handleId: 'h1', offset: 0, chunk: 'aGk=' }],
      ['fs/readBlock', { handleId: 'nope', offset: 0, len: 4 }],
      ['fs/readBlock', { handleId: 'nope', offset: 0, len: 0 }],
      ['fs/writeBlock', { handleId: 'nope', offset: 0, chunk: 'aGk=' }],
      ['fs/writeBlock', { handleId: 'nope', offset: 0, chunk: 'a*k=' }],
      ['fs/close', { handleId: 'h1' }],
      ['fs/close', { handleId: 'h1' }],
      ['fs/readBlock', { handleId: 'h1', offset: 0, len: 4 }],
      ['fs/open', { handleId: 'h2', path: '@/missing' }],
      ['fs/open', { handleId: 'h2', path: '@/dir' }],
      ['fs/open', { handleId: 'h2', path: '@/fifo' }],
      ['fs/open', { handleId: 'h2', path: '@/f.txt/x' }],
      ['fs/open', { handleId: 'h2', path: '@/f.txt', mode: 'write' }],
      ['fs/open', { handleId: 'h2', path: '@/dir', mode: 'replace' }],
      ['fs/open', { handleId: long, path: '@/f.txt' }],
      ['fs/open', { handleId: long, path: '/rel' }],
      ['fs/close', { handleId: long }],
      ['fs/writeBlock', { handleId: long, offset: 0, chunk: 'aGk=' }],
      ['fs/open', { handleId: '', path: '@/f.txt' }],
      ['fs/readBlock', { handleId: '', offset: 0, len: 3 }],
      ['fs/open', { handleId: 'r1', path: '@/new.bin', mode: 'replace' }],
      ['fs/writeBlock', { handleId: 'r1', offset: 0, chunk: 'aGVsbG8=' }],
      ['fs/writeBlock', { handleId: 'r1', offset: 10, chunk: 'aGk=' }],
      ['fs/readBlock', { handleId: 'r1', offset: 0, len: 4 }],
      ['fs/close', { handleId: 'r1' }],
      ['fs/readFile', { path: '@/new.bin' }],
      ['fs/open', { handleId: 'r2', path: '@/w2.txt', mode: 'replace' }],
      ['fs/open', { handleId: 'r2', path: '@/f.txt', mode: 'replace' }],
      ['fs/readFile', { path: '@/f.txt' }],
      ['fs/open', { handleId: 'b', path: '@/sparse.bin' }],
      ['fs/readBlock', { handleId: 'b', offset: 629145590, len: 10 }],
      ['fs/readBlock', { handleId: 'b', offset: 629145595, len: 10 }],
    ]);
  });

  test('where ours deliberately differs: a file copied onto itself keeps its content', async () => {
    for (const t of targets.values()) fs.writeFileSync(join(t.root, 'self.txt'), 'keep me');
    await agree([['fs/copy', { sourcePath: '@/self.txt', destinationPath: '@/self.txt', recursive: false }]]);
    // The reference truncates it (std::fs::copy onto the same file); ours leaves it alone.
    assert.equal(fs.readFileSync(join(targets.get('ours')!.root, 'self.txt'), 'utf8'), 'keep me');
    assert.equal(fs.readFileSync(join(targets.get('codex')!.root, 'self.txt'), 'utf8'), '');
  });
});

describe('http/request interop with codex exec-server', () => {
  let server: http.Server;
  let base = '';
  let deadPort = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      const u = new URL(req.url!, 'http://x');
      req.resume();
      req.on('end', () => {
        if (u.pathname === '/hello') {
          res.setHeader('X-Multi', ['a', 'b']);
          res.setHeader('Content-Type', 'text/plain');
          res.end('hello');
        } else if (u.pathname === '/redirect') {
          res.writeHead(Number(u.searchParams.get('status') ?? 302), { Location: u.searchParams.get('to') ?? '/hello' });
          res.end('moved');
        } else if (u.pathname === '/loop') {
          res.writeHead(302, { Location: '/loop' });
          res.end();
        } else if (u.pathname === '/gzip') {
          const z = gzipSync('zipped!');
          res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': z.length });
          res.end(z);
        } else if (u.pathname === '/stream') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          let i = 0;
          const next = (): void => {
            res.write(`part${i}\n`, () => (++i === 3 ? res.end() : setTimeout(next, 20)));
          };
          next();
        } else if (u.pathname === '/status') {
          res.writeHead(Number(u.searchParams.get('s')));
          res.end('st');
        } else {
          // Echo what matters of the request (what the clients add differs: see below).
          res.setHeader('content-type', 'application/json');
          res.end(
            JSON.stringify({
              method: req.method,
              url: req.url,
              authorization: req.headers.authorization ?? null,
              xa: req.headers['x-a'] ?? null,
            }),
          );
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const closed = http.createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    deadPort = (closed.address() as AddressInfo).port;
    closed.close();
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  test('results and errors', async () => {
    const codex = await agree([
      ['http/request', { method: 'GET', url: `${base}/hello`, requestId: 'r1' }],
      ['http/request', { method: 'GET', url: `${base}/status?s=404`, requestId: 'r2' }],
      ['http/request', { method: 'HEAD', url: `${base}/hello`, requestId: 'r3' }],
      ['http/request', { method: 'GET', url: `${base}/redirect`, requestId: 'r4' }],
      ['http/request', { method: 'GET', url: `${base}/redirect`, requestId: 'r5', redirectPolicy: 'stop' }],
      ['http/request', { method: 'POST', url: `${base}/redirect?status=303&to=/echo`, requestId: 'r6', bodyBase64: 'aGk=' }],
      ['http/request', { method: 'GET', url: `${base}/loop`, requestId: 'r7' }],
      ['http/request', { method: 'GET', url: `${base}/redirect?to=ftp://x/`, requestId: 'r8' }],
      [
        'http/request',
        {
          method: 'GET',
          url: `${base}/echo`,
          requestId: 'r9',
          headers: [
            { name: 'Authorization', value: 'Bearer ', valueEnvVar: 'FS_INTEROP_TOKEN' },
            { name: 'X-A', value: '1' },
            { name: 'x-a', value: '2' },
          ],
        },
      ],
      [
        'http/request',
        { method: 'GET', url: `${base}/echo`, requestId: 'e1', headers: [{ name: 'X', value: 'v', valueEnvVar: 'FS_INTEROP_UNSET' }] },
      ],
      ['http/request', { method: 'GET', url: 'ftp://x/', requestId: 'e2' }],
      ['http/request', { method: 'GET', url: 'not a url', requestId: 'e3' }],
      ['http/request', { method: 'G T', url: `${base}/echo`, requestId: 'e4' }],
      ['http/request', { method: 'GET', url: `${base}/echo`, requestId: 'e5', headers: [{ name: 'bad name', value: 'x' }] }],
      ['http/request', { method: 'GET', url: `${base}/echo`, requestId: 'e6', headers: [{ name: 'X-NL', value: 'a\nb' }] }],
      ['http/request', { method: 'GET', url: `${base}/echo`, requestId: 'e7', bodyBase64: 'a*k=' }],
      ['http/request', { method: 'GET', url: `${base}/echo`, requestId: 'e8', redirectPolicy: 'nope' }],
      ['http/request', { method: 'GET', url: `${base}/echo` }],
      ['http/request', { method: 'GET', url: `http://127.0.0.1:${deadPort}/x?q=1`, requestId: 'e9' }],
      ['http/request', { method: 'GET', url: `${base}/echo`, requestId: 'e10', timeoutMs: 0 }],
    ]);
    assert.deepEqual(JSON.parse(Buffer.from((codex[8] as { result: { bodyBase64: string } }).result.bodyBase64, 'base64').toString()), {
      method: 'GET',
      url: '/echo',
      authorization: 'Bearer sekrit',
      xa: '1, 2',
    });
  });

  test('gzip bodies are decoded by both (header order after decoding differs)', async () => {
    const sorted = (r: WireMessage) => ({
      ...r.result,
      headers: [...r.result.headers].filter((h) => h.name !== 'date').sort((a, b) => a.name.localeCompare(b.name)),
    });
    const [ours, codex] = await Promise.all(
      KINDS.map((k) => targets.get(k)!.client.call('http/request', { method: 'GET', url: `${base}/gzip`, requestId: 'g' })),
    );
    assert.deepEqual(sorted(ours!), sorted(codex!));
    assert.equal(Buffer.from(codex!.result.bodyBase64, 'base64').toString(), 'zipped!');
  });

  test('streamed bodies: same result, same deltas once joined, seq 1.. and one final done', async () => {
    const runs = await Promise.all(
      KINDS.map(async (kind) => {
        const c = targets.get(kind)!.client;
        const answer = await c.call('http/request', { method: 'GET', url: `${base}/stream`, requestId: 's1', streamResponse: true });
        await c.waitFor((m) => m.method === 'http/request/bodyDelta' && m.params.requestId === 's1' && m.params.done, 5000, 'last delta');
        const deltas = c.received.filter((m) => m.method === 'http/request/bodyDelta' && m.params.requestId === 's1').map((m) => m.params);
        return { kind, result: normalize(answer.result, ''), deltas };
      }),
    );
    const [ours, codex] = runs;
    assert.deepEqual(ours!.result, codex!.result);
    for (const run of runs) {
      assert.deepEqual(
        run.deltas.map((d) => d.seq),
        run.deltas.map((_, i) => i + 1),
        run.kind,
      );
      assert.equal(run.deltas.map((d) => Buffer.from(d.deltaBase64, 'base64').toString()).join(''), 'part0\npart1\npart2\n', run.kind);
      assert.deepEqual(run.deltas.at(-1), { requestId: 's1', seq: run.deltas.length, deltaBase64: '', done: true, error: null }, run.kind);
    }
  });
});

describe('fs/readFile of files whose stat size lies (security issue 9)', () => {
  /** Peak resident memory of our server so far, in MiB. */
  const peakMiB = () => {
    const pid = targets.get('ours')!.server.child.pid!;
    return Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  };

  test('an endless size-0 procfs file, /dev/zero and a FIFO answer quickly with an error; memory stays bounded', async () => {
    const { client, root } = targets.get('ours')!;
    const before = peakMiB();
    const t0 = Date.now();
    const answers = await Promise.all(
      ['file:///proc/self/pagemap', 'file:///dev/zero', pathToFileURL(join(root, 'fifo')).href].map((path) =>
        client.call('fs/readFile', { path }, undefined, 15_000),
      ),
    );
    const elapsed = Date.now() - t0;
    assert.equal(answers[0]!.error?.code, -32603);
    assert.match(answers[0]!.error!.message, /^file is too large to return in one message \(more than 268435456 bytes;/);
    assert.deepEqual(answers[1]!.error, { code: -32600, message: 'path `/dev/zero` is not a file' });
    assert.deepEqual(answers[2]!.error, { code: -32600, message: `path \`${join(root, 'fifo')}\` is not a file` });
    assert.ok(elapsed < 10_000, `answered after ${elapsed} ms`);
    // The read stops at the 256 MiB limit: the peak grows by about that (it grew past 4 GB before).
    const grown = peakMiB() - before;
    assert.ok(grown < 600, `peak RSS grew by ${grown.toFixed(0)} MiB`);
    // The server is still fine.
    assert.deepEqual((await client.call('fs/readFile', { path: pathToFileURL(join(root, 'f.txt')).href })).result, {
      dataBase64: 'aGVsbG8K',
    });
  });
});

describe('fs/* with a sandbox field, over the wire (security issue 9)', () => {
  test('read-only and workspace-write refuse writes outside the writable roots, as codex does', async (t) => {
    const ro = sandboxForPolicy({ policy: 'read-only', cwd: '@/dir' });
    const ww = sandboxForPolicy({ policy: 'workspace-write', cwd: '@/dir' });
    const erofs = { error: { code: -32603, message: 'Read-only file system (os error 30)' } };
    // Only there if a server failed to refuse them.
    t.after(() => ['/etc/eb-fs-int-probe', '/usr/eb-fs-int-probe'].forEach((p) => fs.rmSync(p, { recursive: true, force: true })));
    const codex = await agree([
      ['fs/writeFile', { path: 'file:///etc/eb-fs-int-probe', dataBase64: 'aGk=', sandbox: ro }],
      ['fs/writeFile', { path: 'file:///etc/eb-fs-int-probe', dataBase64: 'aGk=', sandbox: ww }],
      ['fs/createDirectory', { path: 'file:///usr/eb-fs-int-probe', sandbox: ww }],
      ['fs/writeFile', { path: '@/dir/ro-new', dataBase64: 'aGk=', sandbox: ro }],
      ['fs/writeFile', { path: '@/dir/ww-new', dataBase64: 'aGk=', sandbox: ww }],
      ['fs/readFile', { path: '@/dir/ww-new', sandbox: ro }],
      ['fs/remove', { path: '@/dir/ww-new', sandbox: ro }],
      ['fs/remove', { path: '@/dir/ww-new', sandbox: ww }],
    ]);
    assert.deepEqual(codex.slice(0, 4), [erofs, erofs, erofs, erofs]);
    assert.deepEqual(codex[4], { result: {} });
    assert.equal(fs.existsSync('/etc/eb-fs-int-probe'), false);
    assert.equal(fs.existsSync('/usr/eb-fs-int-probe'), false);
    for (const t of targets.values()) assert.equal(fs.existsSync(join(t.root, 'dir/ww-new')), false);
  });
});
