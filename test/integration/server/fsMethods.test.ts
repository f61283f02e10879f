// fs/* against real temp directories, through the typed router. Expected values (results, codes,
// messages) are what `codex exec-server` 0.171.0 answered for the same operations.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { RpcError } from '../../../src/rpc/errors';
import { Router } from '../../../src/rpc/router';
import { FileHandleTable } from '../../../src/server/fileHandles';
import { registerFsMethods, type FsContext } from '../../../src/server/fsMethods';
import { decodeBase64, ioErrorToRpc } from '../../../src/server/rustCompat';

const router = new Router<FsContext>();
registerFsMethods(router);

let root = '';
const uri = (rel = '') => pathToFileURL(join(root, rel)).href;
const b64 = (s: string) => Buffer.from(s).toString('base64');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, params: unknown, ctx: FsContext = { fileHandles: new FileHandleTable() }): Promise<any> {
  // As the wire has it: a result object may serialise itself (BinaryResult → {dataBase64}).
  const result: unknown = await router.dispatch(method, params, ctx);
  return result === undefined ? result : JSON.parse(JSON.stringify(result));
}

/** The error a call fails with, as `{code, message}`. */
async function fail(method: string, params: unknown, ctx?: FsContext): Promise<{ code: number; message: string }> {
  try {
    await call(method, params, ctx);
  } catch (e) {
    assert.ok(e instanceof RpcError, `expected an RpcError, got ${String(e)}`);
    return { code: e.code, message: e.message };
  }
  assert.fail(`${method} ${JSON.stringify(params)} succeeded`);
}

const ENOENT = { code: -32004, message: 'No such file or directory (os error 2)' };
const ENOTDIR = { code: -32603, message: 'Not a directory (os error 20)' };
const EEXIST = { code: -32603, message: 'File exists (os error 17)' };
const EISDIR = { code: -32603, message: 'Is a directory (os error 21)' };

before(() => {
  root = mkdtempSync(join(tmpdir(), 'fs-methods-'));
  fs.writeFileSync(join(root, 'f.txt'), 'hello\n');
  fs.mkdirSync(join(root, 'dir/sub'), { recursive: true });
  fs.writeFileSync(join(root, 'dir/a.txt'), 'x\n');
  fs.writeFileSync(join(root, 'dir/sub/b.txt'), 'y\n');
  fs.symlinkSync('f.txt', join(root, 'link'));
  fs.symlinkSync('dir', join(root, 'dirlink'));
  fs.symlinkSync('nowhere', join(root, 'dangling'));
  execFileSync('mkfifo', [join(root, 'fifo')]);
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('path URIs', () => {
  test('are checked like the reference: -32602 when malformed, -32600 when not on this host', async () => {
    assert.deepEqual(await fail('fs/readFile', { path: '/tmp/x' }), { code: -32602, message: 'invalid URI: relative URL without a base' });
    assert.deepEqual(await fail('fs/readFile', { path: '' }), { code: -32602, message: 'invalid URI: relative URL without a base' });
    assert.deepEqual(await fail('fs/readFile', { path: 'http://x/y' }), { code: -32602, message: 'unsupported path URI scheme `http`' });
    assert.deepEqual(await fail('fs/readFile', { path: 'file://relative/x' }), {
      code: -32600,
      message: "'file://relative/x' is invalid on 'linux'",
    });
    assert.deepEqual(await fail('fs/readFile', { path: 'file://Relative/x/../y' }), {
      code: -32600,
      message: "'file://relative/y' is invalid on 'linux'",
    });
    assert.deepEqual(await fail('fs/readFile', { path: `${uri('f.txt')}?x=1#f` }), {
      code: -32602,
      message: 'query parameters are not allowed in path URIs',
    });
    assert.deepEqual(await fail('fs/readFile', { path: `${uri('f.txt')}#f` }), {
      code: -32602,
      message: 'fragments are not allowed in path URIs',
    });
    assert.deepEqual(await fail('fs/readFile', { path: 'file:///tmp/a%00b' }), {
      code: -32602,
      message: "'file:///tmp/a%00b' is invalid on 'linux'",
    });
    assert.deepEqual(await fail('fs/readFile', {}), { code: -32602, message: 'missing field `path`' });
  });

  test('accept localhost, dot segments and percent escapes', async () => {
    assert.equal((await call('fs/readFile', { path: `file://localhost${join(root, 'f.txt')}` })).dataBase64, b64('hello\n'));
    assert.equal((await call('fs/readFile', { path: `${uri('dir')}/%2e%2e/f.txt` })).dataBase64, b64('hello\n'));
    await call('fs/writeFile', { path: `${uri()}/sp%20ace%25.txt`, dataBase64: b64('s') });
    assert.equal(fs.readFileSync(join(root, 'sp ace%.txt'), 'utf8'), 's');
  });
});

describe('fs/readFile and fs/writeFile', () => {
  test('read files, following links', async () => {
    assert.deepEqual(await call('fs/readFile', { path: uri('f.txt') }), { dataBase64: 'aGVsbG8K' });
    assert.deepEqual(await call('fs/readFile', { path: uri('link') }), { dataBase64: 'aGVsbG8K' });
  });

  test('refuse what is not a readable file', async () => {
    assert.deepEqual(await fail('fs/readFile', { path: uri('dir') }), {
      code: -32600,
      message: `path \`${join(root, 'dir')}\` is not a file`,
    });
    assert.deepEqual(await fail('fs/readFile', { path: uri('fifo') }), {
      code: -32600,
      message: `path \`${join(root, 'fifo')}\` is not a file`,
    });
    assert.deepEqual(await fail('fs/readFile', { path: uri('missing') }), ENOENT);
    assert.deepEqual(await fail('fs/readFile', { path: uri('dangling') }), ENOENT);
    assert.deepEqual(await fail('fs/readFile', { path: uri('f.txt/x') }), ENOTDIR);
  });

  test('refuse files too big for one message (sparse files, nothing is read)', async () => {
    const big = join(root, 'big.bin');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, 600 * 1024 * 1024);
    assert.deepEqual(await fail('fs/readFile', { path: uri('big.bin') }), {
      code: -32600,
      message: 'file is too large to read: limit is 536870912 bytes',
    });
    fs.truncateSync(big, 300 * 1024 * 1024);
    const e = await fail('fs/readFile', { path: uri('big.bin') });
    assert.equal(e.code, -32603);
    assert.match(e.message, /too large to return in one message .*fs\/readBlock/);
    fs.rmSync(big);
  });

  test('write creates or truncates, through links, and reports OS errors', async () => {
    await call('fs/writeFile', { path: uri('w.txt'), dataBase64: b64('first, longer') });
    assert.deepEqual(await call('fs/writeFile', { path: uri('w.txt'), dataBase64: 'aGk=' }), {});
    assert.equal(fs.readFileSync(join(root, 'w.txt'), 'utf8'), 'hi');
    assert.deepEqual(await call('fs/writeFile', { path: uri('w.txt'), dataBase64: '' }), {});
    assert.equal(fs.readFileSync(join(root, 'w.txt'), 'utf8'), '');
    fs.symlinkSync('made-by-link', join(root, 'dangling-w'));
    await call('fs/writeFile', { path: uri('dangling-w'), dataBase64: 'aGk=' });
    assert.equal(fs.readFileSync(join(root, 'made-by-link'), 'utf8'), 'hi');
    assert.deepEqual(await fail('fs/writeFile', { path: uri('nodir/w.txt'), dataBase64: 'aGk=' }), ENOENT);
    assert.deepEqual(await fail('fs/writeFile', { path: uri('dir'), dataBase64: 'aGk=' }), EISDIR);
    assert.deepEqual(await fail('fs/writeFile', { path: uri('f.txt/x'), dataBase64: 'aGk=' }), ENOTDIR);
    assert.deepEqual(await fail('fs/writeFile', { path: uri('w.txt') }), { code: -32602, message: 'missing field `dataBase64`' });
  });

  test('bad base64 is -32600 with the decoder message; URI errors come first', async () => {
    const cases: Array<[string, string]> = [
      ['a*k=', 'Invalid symbol 42, offset 1.'],
      ['aGk', 'Invalid padding'],
      ['a', 'Invalid input length: 1'],
      ['aGl=', 'Invalid last symbol 108, offset 2.'],
      ['aGk=aGk=', 'Invalid symbol 61, offset 3.'],
      ['aGVsbG8K\n', 'Invalid symbol 10, offset 8.'],
    ];
    for (const [data, message] of cases) {
      assert.deepEqual(await fail('fs/writeFile', { path: uri('w.txt'), dataBase64: data }), {
        code: -32600,
        message: `fs/writeFile requires valid base64 dataBase64: ${message}`,
      });
    }
    assert.equal((await fail('fs/writeFile', { path: '/rel', dataBase64: 'a*k=' })).code, -32602);
    // …but the host check comes after the base64 check.
    assert.match(
      (await fail('fs/writeFile', { path: 'file://host/x', dataBase64: 'a*k=' })).message,
      /^fs\/writeFile requires valid base64/,
    );
  });

  test('the base64 decoder matches the reference on every error kind', () => {
    const cases: Array<[string, string]> = [
      ['aGk==', 'Invalid symbol 61, offset 3.'],
      ['aG=k', 'Invalid symbol 61, offset 2.'],
      ['aGVsbG8 ', 'Invalid symbol 32, offset 7.'],
      ['aGVs-G8=', 'Invalid symbol 45, offset 4.'],
      ['aGVsbA', 'Invalid padding'],
      ['aGVsbG==', 'Invalid last symbol 71, offset 5.'],
      ['=', 'Invalid symbol 61, offset 0.'],
      ['====', 'Invalid symbol 61, offset 0.'],
    ];
    for (const [text, message] of cases) assert.deepEqual(decodeBase64(text), { ok: false, message }, text);
    for (const text of ['', 'aGk=', 'aGVsbA==', '/w==', 'aGVsbG8K']) {
      const r = decodeBase64(text);
      assert.ok(r.ok && r.bytes.equals(Buffer.from(text, 'base64')), text);
    }
  });
});

describe('fs/createDirectory', () => {
  test('defaults to mkdir -p', async () => {
    assert.deepEqual(await call('fs/createDirectory', { path: uri('c1/c2') }), {});
    assert.deepEqual(await call('fs/createDirectory', { path: uri('c1/c2') }), {});
    assert.ok(fs.statSync(join(root, 'c1/c2')).isDirectory());
    assert.deepEqual(await call('fs/createDirectory', { path: uri('dirlink'), recursive: true }), {});
  });

  test('errors', async () => {
    assert.deepEqual(await fail('fs/createDirectory', { path: uri('c1/c2'), recursive: false }), EEXIST);
    assert.deepEqual(await fail('fs/createDirectory', { path: uri('c3/c4'), recursive: false }), ENOENT);
    assert.deepEqual(await fail('fs/createDirectory', { path: uri('f.txt'), recursive: true }), EEXIST);
    assert.deepEqual(await fail('fs/createDirectory', { path: uri('link'), recursive: true }), EEXIST);
    assert.deepEqual(await fail('fs/createDirectory', { path: uri('f.txt/sub') }), ENOTDIR);
  });
});

describe('fs/getMetadata', () => {
  test('follows links by default, reports the link, and createdAtMs 0', async () => {
    const mtime = (p: string) => Number(fs.statSync(join(root, p), { bigint: true }).mtimeNs / 1_000_000n);
    assert.deepEqual(await call('fs/getMetadata', { path: uri('f.txt') }), {
      isDirectory: false,
      isFile: true,
      isSymlink: false,
      size: 6,
      createdAtMs: 0,
      modifiedAtMs: mtime('f.txt'),
    });
    assert.deepEqual(await call('fs/getMetadata', { path: uri('link'), followSymlinks: null }), {
      isDirectory: false,
      isFile: true,
      isSymlink: true,
      size: 6,
      createdAtMs: 0,
      modifiedAtMs: mtime('f.txt'),
    });
    const dl = await call('fs/getMetadata', { path: uri('dirlink') });
    assert.deepEqual([dl.isDirectory, dl.isFile, dl.isSymlink], [true, false, true]);
    const fifo = await call('fs/getMetadata', { path: uri('fifo') });
    assert.deepEqual([fifo.isDirectory, fifo.isFile, fifo.isSymlink, fifo.size], [false, false, false, 0]);
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('dangling') }), ENOENT);
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('missing') }), ENOENT);
  });

  test('followSymlinks:false refuses any link on the way and reports the birth time', async () => {
    const st = fs.statSync(join(root, 'dir'), { bigint: true });
    assert.deepEqual(await call('fs/getMetadata', { path: uri('dir'), followSymlinks: false }), {
      isDirectory: true,
      isFile: false,
      isSymlink: false,
      size: Number(st.size),
      createdAtMs: Number(st.birthtimeNs / 1_000_000n),
      modifiedAtMs: Number(st.mtimeNs / 1_000_000n),
    });
    // Dot segments are resolved in the URI, before any link is looked at.
    assert.equal((await call('fs/getMetadata', { path: uri('dirlink/../f.txt'), followSymlinks: false })).isFile, true);
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('link'), followSymlinks: false }), {
      code: -32600,
      message: 'path contains a symbolic link',
    });
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('dangling'), followSymlinks: false }), {
      code: -32600,
      message: 'path contains a symbolic link',
    });
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('dirlink/a.txt'), followSymlinks: false }), ENOTDIR);
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('f.txt/x'), followSymlinks: false }), ENOTDIR);
    assert.deepEqual(await fail('fs/getMetadata', { path: uri('nodir/x'), followSymlinks: false }), ENOENT);
  });
});

describe('fs/readDirectory and fs/canonicalize', () => {
  test('lists entries with followed types, leaving out dangling links', async () => {
    const { entries } = await call('fs/readDirectory', { path: uri('dir') });
    assert.deepEqual(
      [...entries].sort((a: { fileName: string }, b: { fileName: string }) => a.fileName.localeCompare(b.fileName)),
      [
        { fileName: 'a.txt', isDirectory: false, isFile: true },
        { fileName: 'sub', isDirectory: true, isFile: false },
      ],
    );
    const top = new Map<string, unknown>(
      (await call('fs/readDirectory', { path: uri() })).entries.map((e: { fileName: string }) => [e.fileName, e]),
    );
    assert.equal(top.has('dangling'), false);
    assert.deepEqual(top.get('fifo'), { fileName: 'fifo', isDirectory: false, isFile: false });
    assert.deepEqual(top.get('dirlink'), { fileName: 'dirlink', isDirectory: true, isFile: false });
    assert.deepEqual(top.get('link'), { fileName: 'link', isDirectory: false, isFile: true });
    assert.deepEqual(await call('fs/readDirectory', { path: uri('dirlink/sub/') }), {
      entries: [{ fileName: 'b.txt', isDirectory: false, isFile: true }],
    });
  });

  test('keeps the directory order of the OS (like readdir(3), not sorted)', async () => {
    fs.mkdirSync(join(root, 'many'));
    for (let i = 0; i < 40; i++) fs.writeFileSync(join(root, 'many', `n${(i * 7919) % 40}`), '');
    const osOrder: string[] = [];
    for await (const d of await fs.promises.opendir(join(root, 'many'))) osOrder.push(d.name);
    const { entries } = await call('fs/readDirectory', { path: uri('many') });
    assert.deepEqual(
      entries.map((e: { fileName: string }) => e.fileName),
      osOrder,
    );
  });

  test('errors', async () => {
    assert.deepEqual(await fail('fs/readDirectory', { path: uri('f.txt') }), ENOTDIR);
    assert.deepEqual(await fail('fs/readDirectory', { path: uri('missing') }), ENOENT);
  });

  test('canonicalize resolves links and dot segments', async () => {
    const real = fs.realpathSync(root);
    assert.deepEqual(await call('fs/canonicalize', { path: uri('dir/../link') }), { path: pathToFileURL(join(real, 'f.txt')).href });
    assert.deepEqual(await call('fs/canonicalize', { path: `${uri('dirlink')}/` }), { path: pathToFileURL(join(real, 'dir')).href });
    assert.deepEqual(await call('fs/canonicalize', { path: 'file:///' }), { path: 'file:///' });
    assert.deepEqual(await fail('fs/canonicalize', { path: uri('missing') }), ENOENT);
    assert.deepEqual(await fail('fs/canonicalize', { path: uri('dangling') }), ENOENT);
    assert.deepEqual(await fail('fs/canonicalize', { path: uri('f.txt/x') }), ENOTDIR);
  });
});

describe('fs/copy', () => {
  before(() => {
    fs.mkdirSync(join(root, 'cp/src/inner'), { recursive: true });
    fs.writeFileSync(join(root, 'cp/src/one'), '1');
    fs.writeFileSync(join(root, 'cp/src/inner/two'), '2');
    fs.symlinkSync('one', join(root, 'cp/src/lnk'));
    fs.symlinkSync('/nonexistent', join(root, 'cp/src/dang'));
    execFileSync('mkfifo', [join(root, 'cp/src/ff')]);
  });

  test('files: copy, overwrite, onto itself; links are copied as links', async () => {
    const cp = (s: string, d: string, recursive = false) => call('fs/copy', { sourcePath: uri(s), destinationPath: uri(d), recursive });
    assert.deepEqual(await cp('cp/src/one', 'cp/one.copy'), {});
    fs.writeFileSync(join(root, 'cp/one.copy'), 'old and longer');
    await cp('cp/src/one', 'cp/one.copy');
    assert.equal(fs.readFileSync(join(root, 'cp/one.copy'), 'utf8'), '1');
    // Ours keeps the content (the reference truncates a file copied onto itself).
    await cp('cp/src/one', 'cp/src/one');
    assert.equal(fs.readFileSync(join(root, 'cp/src/one'), 'utf8'), '1');
    await cp('cp/src/dang', 'cp/dang.copy');
    assert.equal(fs.readlinkSync(join(root, 'cp/dang.copy')), '/nonexistent');
    await cp('dirlink', 'cp/dirlink.copy');
    assert.equal(fs.readlinkSync(join(root, 'cp/dirlink.copy')), 'dir');
  });

  test('directories: recursive only, not into themselves; links kept, FIFOs skipped', async () => {
    const sourcePath = uri('cp/src');
    assert.deepEqual(await fail('fs/copy', { sourcePath, destinationPath: uri('cp/dst'), recursive: false }), {
      code: -32600,
      message: 'fs/copy requires recursive: true when sourcePath is a directory',
    });
    assert.deepEqual(await call('fs/copy', { sourcePath, destinationPath: uri('cp/new/parents/dst'), recursive: true }), {});
    const dst = join(root, 'cp/new/parents/dst');
    assert.deepEqual(fs.readdirSync(dst).sort(), ['dang', 'inner', 'lnk', 'one']);
    assert.equal(fs.readlinkSync(join(dst, 'lnk')), 'one');
    assert.equal(fs.readFileSync(join(dst, 'inner/two'), 'utf8'), '2');
    const itself = { code: -32600, message: 'fs/copy cannot copy a directory to itself or one of its descendants' };
    assert.deepEqual(await fail('fs/copy', { sourcePath, destinationPath: sourcePath, recursive: true }), itself);
    assert.deepEqual(await fail('fs/copy', { sourcePath, destinationPath: uri('cp/src/inner/deeper'), recursive: true }), itself);
    // Into an existing copy: files are overwritten, but an existing link is not.
    assert.deepEqual(await fail('fs/copy', { sourcePath, destinationPath: uri('cp/new/parents/dst'), recursive: true }), EEXIST);
    assert.deepEqual(await fail('fs/copy', { sourcePath, destinationPath: uri('cp/one.copy'), recursive: true }), EEXIST);
  });

  test('errors', async () => {
    assert.deepEqual(await fail('fs/copy', { sourcePath: uri('cp/missing'), destinationPath: uri('cp/m2'), recursive: true }), ENOENT);
    assert.deepEqual(await fail('fs/copy', { sourcePath: uri('f.txt'), destinationPath: uri('dir'), recursive: false }), EISDIR);
    assert.deepEqual(await fail('fs/copy', { sourcePath: uri('f.txt'), destinationPath: uri('nodir/x'), recursive: false }), ENOENT);
    assert.deepEqual(await fail('fs/copy', { sourcePath: uri('fifo'), destinationPath: uri('fifo.copy'), recursive: false }), {
      code: -32600,
      message: 'fs/copy only supports regular files, directories, and symlinks',
    });
    assert.deepEqual(await fail('fs/copy', { sourcePath: uri('f.txt'), destinationPath: uri('x') }), {
      code: -32602,
      message: 'missing field `recursive`',
    });
    assert.deepEqual(await fail('fs/copy', { sourcePath: uri('missing'), destinationPath: 'file://host/x', recursive: false }), {
      code: -32600,
      message: "'file://host/x' is invalid on 'linux'",
    });
  });
});

describe('fs/remove', () => {
  test('defaults to rm -rf; links are removed, not their targets', async () => {
    fs.mkdirSync(join(root, 'rm/full/x'), { recursive: true });
    fs.writeFileSync(join(root, 'rm/full/x/z'), 'z');
    fs.mkdirSync(join(root, 'rm/emptyd'));
    fs.writeFileSync(join(root, 'rm/file'), 'q');
    fs.symlinkSync('full', join(root, 'rm/dlink'));
    assert.deepEqual(await call('fs/remove', { path: uri('rm/missing') }), {});
    assert.deepEqual(await call('fs/remove', { path: uri('rm/nodir/x'), force: true }), {});
    assert.deepEqual(await call('fs/remove', { path: uri('rm/dlink'), recursive: true }), {});
    assert.ok(fs.existsSync(join(root, 'rm/full/x/z')));
    assert.deepEqual(await call('fs/remove', { path: uri('rm/emptyd'), recursive: false }), {});
    assert.deepEqual(await call('fs/remove', { path: uri('rm/file'), recursive: false, force: false }), {});
    assert.deepEqual(await fail('fs/remove', { path: uri('rm/full'), recursive: false }), {
      code: -32603,
      message: 'Directory not empty (os error 39)',
    });
    assert.deepEqual(await fail('fs/remove', { path: uri('rm/full/x/z/q') }), ENOTDIR);
    assert.deepEqual(await fail('fs/remove', { path: uri('rm/missing'), force: false }), ENOENT);
    assert.deepEqual(await call('fs/remove', { path: uri('rm/full') }), {});
    assert.deepEqual(fs.readdirSync(join(root, 'rm')), []);
  });
});

describe('fs/walk', () => {
  const W = () => uri('wk');
  const opts = (o: object = {}) => ({ maxDepth: 5, maxDirectories: 100, maxEntries: 1000, followDirectorySymlinks: false, ...o });
  const walk = async (o: object = {}, path = W()) => {
    const r = await call('fs/walk', { path, options: opts(o) });
    return { ...r, entries: r.entries.map((e: { path: string; kind: string }) => `${e.kind[0]} ${e.path.slice(W().length)}`) };
  };

  before(() => {
    fs.mkdirSync(join(root, 'wk/a/.hid/x'), { recursive: true });
    fs.mkdirSync(join(root, 'wk/b'));
    fs.writeFileSync(join(root, 'wk/b/f'), '');
    fs.symlinkSync('loop2', join(root, 'wk/loop1'));
    fs.symlinkSync('loop1', join(root, 'wk/loop2'));
    fs.symlinkSync('..', join(root, 'wk/a/up'));
    fs.symlinkSync('../b', join(root, 'wk/a/tob'));
    fs.symlinkSync('/nonexistent', join(root, 'wk/dang'));
    execFileSync('mkfifo', [join(root, 'wk/fifo')]);
  });

  test('breadth first, sorted, skipping links, FIFOs and broken entries', async () => {
    assert.deepEqual(await walk(), { entries: ['d /a', 'd /b', 'd /a/.hid', 'f /b/f', 'd /a/.hid/x'], errors: [], truncated: false });
  });

  test('following directory links lists them once and never loops', async () => {
    assert.deepEqual(await walk({ followDirectorySymlinks: true }), {
      entries: ['d /a', 'd /b', 'd /a/.hid', 'd /a/tob', 'd /a/up', 'f /b/f', 'd /a/.hid/x'],
      errors: [],
      truncated: false,
    });
    assert.deepEqual((await walk({ followDirectorySymlinks: true, maxDepth: 1 }, uri('wk/a/up'))).entries, [
      'd /a/up/a',
      'd /a/up/b',
      'd /a/up/a/.hid',
      'd /a/up/a/tob',
      'd /a/up/a/up',
      'f /a/up/b/f',
    ]);
    assert.deepEqual(await walk({}, uri('wk/a/up')), { entries: [], errors: [], truncated: false });
  });

  test('pruneHiddenDirectories lists hidden directories without entering them', async () => {
    assert.deepEqual((await walk({ followDirectorySymlinks: true, pruneHiddenDirectories: true })).entries, [
      'd /a',
      'd /b',
      'd /a/.hid',
      'd /a/tob',
      'd /a/up',
      'f /b/f',
    ]);
  });

  test('limits truncate (every listed entry counts; the root counts as a directory)', async () => {
    assert.deepEqual(await walk({ maxDirectories: 1 }), { entries: ['d /a', 'd /b'], errors: [], truncated: true });
    assert.deepEqual(await walk({ maxEntries: 7 }), { entries: ['d /a', 'd /b', 'd /a/.hid', 'f /b/f'], errors: [], truncated: true });
    assert.equal((await walk({ maxEntries: 8 })).truncated, false);
    assert.deepEqual(await walk({ maxDepth: 0, maxDirectories: 1 }), { entries: ['d /a', 'd /b'], errors: [], truncated: false });
  });

  test('limits and roots that are refused', async () => {
    assert.deepEqual(await fail('fs/walk', { path: W(), options: opts({ maxDirectories: 0 }) }), {
      code: -32600,
      message: 'filesystem walk limits must be greater than zero',
    });
    const tooBig = { code: -32600, message: 'filesystem walk limits exceed maximums: depth=64, directories=10000, entries=50000' };
    assert.deepEqual(await fail('fs/walk', { path: W(), options: opts({ maxDepth: 65 }) }), tooBig);
    assert.deepEqual(await fail('fs/walk', { path: W(), options: opts({ maxEntries: 50_001 }) }), tooBig);
    // The limits are checked before the host of the URI.
    assert.equal(
      (await fail('fs/walk', { path: 'file://host/x', options: opts({ maxEntries: 0 }) })).message,
      'filesystem walk limits must be greater than zero',
    );
    assert.deepEqual(await fail('fs/walk', { path: uri('wk/missing'), options: opts() }), ENOENT);
    assert.deepEqual(await fail('fs/walk', { path: uri('wk/loop1'), options: opts() }), {
      code: -32603,
      message: 'Symbolic link loop (os error 40)',
    });
    assert.deepEqual(await walk({}, uri('wk/b/f')), { entries: [], errors: [], truncated: false });
    assert.deepEqual(await fail('fs/walk', { path: W() }), { code: -32602, message: 'missing field `options`' });
    assert.deepEqual(await fail('fs/walk', { path: W(), options: {} }), { code: -32602, message: 'missing field `maxDepth`' });
  });
});

describe('file handles', () => {
  test('read blocks: eof when fewer bytes than asked; past the end is empty', async () => {
    const ctx = { fileHandles: new FileHandleTable() };
    assert.deepEqual(await call('fs/open', { handleId: 'h1', path: uri('f.txt') }, ctx), { handleId: 'h1' });
    assert.deepEqual(await call('fs/readBlock', { handleId: 'h1', offset: 0, len: 4 }, ctx), { chunk: 'aGVsbA==', eof: false });
    assert.deepEqual(await call('fs/readBlock', { handleId: 'h1', offset: 4, len: 100 }, ctx), { chunk: 'bwo=', eof: true });
    assert.deepEqual(await call('fs/readBlock', { handleId: 'h1', offset: 0, len: 6 }, ctx), { chunk: 'aGVsbG8K', eof: false });
    assert.deepEqual(await call('fs/readBlock', { handleId: 'h1', offset: 100, len: 100 }, ctx), { chunk: '', eof: true });
    assert.deepEqual(await call('fs/readBlock', { handleId: 'h1', offset: Number.MAX_SAFE_INTEGER, len: 1 }, ctx), {
      chunk: '',
      eof: true,
    });
    const badLen = { code: -32600, message: 'file read block length must be between 1 and 1048576' };
    assert.deepEqual(await fail('fs/readBlock', { handleId: 'h1', offset: 0, len: 0 }, ctx), badLen);
    assert.deepEqual(await fail('fs/readBlock', { handleId: 'h1', offset: 0, len: 1048577 }, ctx), badLen);
    assert.deepEqual(await fail('fs/readBlock', { handleId: 'nope', offset: 0, len: 0 }, ctx), badLen);
    assert.deepEqual(await fail('fs/open', { handleId: 'h1', path: uri('missing') }, ctx), {
      code: -32600,
      message: 'file handle `h1` already exists',
    });
    // A read handle cannot write.
    assert.deepEqual(await fail('fs/writeBlock', { handleId: 'h1', offset: 0, chunk: 'aGk=' }, ctx), {
      code: -32603,
      message: 'Bad file descriptor (os error 9)',
    });
    assert.deepEqual(await call('fs/close', { handleId: 'h1' }, ctx), {});
    assert.deepEqual(await call('fs/close', { handleId: 'h1' }, ctx), {});
    assert.deepEqual(await call('fs/close', { handleId: 'never' }, ctx), {});
    assert.deepEqual(await fail('fs/readBlock', { handleId: 'h1', offset: 0, len: 4 }, ctx), {
      code: -32004,
      message: 'unknown file handle `h1`',
    });
    assert.deepEqual(await fail('fs/writeBlock', { handleId: 'h1', offset: 0, chunk: 'aGk=' }, ctx), {
      code: -32004,
      message: 'unknown file handle `h1`',
    });
    // The empty string is a valid id.
    await call('fs/open', { handleId: '', path: uri('f.txt') }, ctx);
    assert.deepEqual(await call('fs/readBlock', { handleId: '', offset: 0, len: 3 }, ctx), { chunk: 'aGVs', eof: false });
    await ctx.fileHandles.closeAll();
  });

  test('replace: truncates at open, writes at offsets (holes read as zeros)', async () => {
    const ctx = { fileHandles: new FileHandleTable() };
    fs.writeFileSync(join(root, 'r.bin'), 'previous content');
    await call('fs/open', { handleId: 'r1', path: uri('r.bin'), mode: 'replace' }, ctx);
    assert.equal(fs.readFileSync(join(root, 'r.bin')).length, 0);
    assert.deepEqual(await call('fs/writeBlock', { handleId: 'r1', offset: 0, chunk: 'aGVsbG8=' }, ctx), {});
    assert.deepEqual(await call('fs/writeBlock', { handleId: 'r1', offset: 10, chunk: 'aGk=' }, ctx), {});
    assert.deepEqual(await fail('fs/readBlock', { handleId: 'r1', offset: 0, len: 4 }, ctx), {
      code: -32603,
      message: 'Bad file descriptor (os error 9)',
    });
    assert.deepEqual(await call('fs/close', { handleId: 'r1' }, ctx), {});
    assert.deepEqual(await call('fs/readFile', { path: uri('r.bin') }), { dataBase64: 'aGVsbG8AAAAAAGhp' });
    await call('fs/open', { handleId: 'new', path: uri('created.bin'), mode: 'replace' }, ctx);
    assert.ok(fs.existsSync(join(root, 'created.bin')));
    await ctx.fileHandles.closeAll();
  });

  test('open errors, in the reference order', async () => {
    const ctx = { fileHandles: new FileHandleTable() };
    const long = 'abcdefghijabcdefghijabcdefghijabc';
    const tooLong = { code: -32600, message: 'file handle ID must not exceed 32 bytes' };
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('missing') }, ctx), ENOENT);
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('dir') }, ctx), {
      code: -32600,
      message: `path \`${join(root, 'dir')}\` is not a file`,
    });
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('fifo') }, ctx), {
      code: -32600,
      message: `path \`${join(root, 'fifo')}\` is not a file`,
    });
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('f.txt/x') }, ctx), ENOTDIR);
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('dir'), mode: 'replace' }, ctx), EISDIR);
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('nodir/x'), mode: 'replace' }, ctx), ENOENT);
    assert.deepEqual(await fail('fs/open', { handleId: 'h', path: uri('f.txt'), mode: 'write' }, ctx), {
      code: -32602,
      message: 'unknown variant `write`, expected `read` or `replace`',
    });
    assert.equal((await fail('fs/open', { handleId: 'h', path: uri('f.txt'), mode: null }, ctx)).code, -32602);
    assert.deepEqual(await fail('fs/open', { handleId: long, path: uri('missing') }, ctx), tooLong);
    assert.deepEqual(await fail('fs/open', { handleId: long, path: 'file://host/x' }, ctx), tooLong);
    assert.equal((await fail('fs/open', { handleId: long, path: '/rel' }, ctx)).code, -32602);
    assert.deepEqual(await fail('fs/close', { handleId: long }, ctx), tooLong);
    assert.deepEqual(await fail('fs/readBlock', { handleId: long, offset: 0, len: 0 }, ctx), tooLong);
    assert.deepEqual(await fail('fs/writeBlock', { handleId: long, offset: 0, chunk: 'a*k=' }, ctx), {
      code: -32602,
      message: 'Invalid symbol 42, offset 1.',
    });
    assert.deepEqual(await fail('fs/writeBlock', { handleId: long, offset: 0, chunk: 'aGk=' }, ctx), tooLong);
    assert.deepEqual(await call('fs/open', { handleId: long.slice(1), path: uri('f.txt') }, ctx), { handleId: long.slice(1) });
    // A taken id is refused before the file is touched: a replace open does not truncate.
    fs.writeFileSync(join(root, 'keep.txt'), 'keep');
    assert.deepEqual(await fail('fs/open', { handleId: long.slice(1), path: uri('keep.txt'), mode: 'replace' }, ctx), {
      code: -32600,
      message: `file handle \`${long.slice(1)}\` already exists`,
    });
    assert.equal(fs.readFileSync(join(root, 'keep.txt'), 'utf8'), 'keep');
    await ctx.fileHandles.closeAll();
  });

  test('the table is bounded, and closeAll closes every file and ends the table', async () => {
    const ctx = { fileHandles: new FileHandleTable(2) };
    await call('fs/open', { handleId: 'a', path: uri('f.txt') }, ctx);
    await call('fs/open', { handleId: 'b', path: uri('f.txt') }, ctx);
    const full = await fail('fs/open', { handleId: 'c', path: uri('f.txt') }, ctx);
    assert.equal(full.code, -32600);
    assert.match(full.message, /too many open file handles \(limit 2\)/);
    await call('fs/close', { handleId: 'a' }, ctx);
    await call('fs/open', { handleId: 'c', path: uri('f.txt') }, ctx);
    const { file } = ctx.fileHandles.get('c');
    await ctx.fileHandles.closeAll();
    assert.equal(ctx.fileHandles.size, 0);
    await assert.rejects(file.stat(), /closed/);
    assert.equal((await fail('fs/open', { handleId: 'd', path: uri('f.txt') }, ctx)).code, -32600);
  });

  test('concurrent opens of one id: one wins, the other file is closed', async () => {
    const ctx = { fileHandles: new FileHandleTable() };
    const results = await Promise.allSettled([0, 1, 2].map(() => call('fs/open', { handleId: 'same', path: uri('f.txt') }, ctx)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    assert.equal(ctx.fileHandles.size, 1);
    await ctx.fileHandles.closeAll();
  });
});

test('OS errors map to codes as the reference maps Rust error kinds', () => {
  const err = (code: string) => Object.assign(new Error(code), { code });
  assert.deepEqual(ioErrorToRpc(err('EACCES')).toWire(), { code: -32600, message: 'Permission denied (os error 13)' });
  assert.deepEqual(ioErrorToRpc(err('EPERM')).toWire(), { code: -32600, message: 'Operation not permitted (os error 1)' });
  assert.deepEqual(ioErrorToRpc(err('EINVAL')).toWire(), { code: -32600, message: 'Invalid argument (os error 22)' });
  assert.deepEqual(ioErrorToRpc(err('ENOENT')).toWire(), { code: -32004, message: 'No such file or directory (os error 2)' });
  assert.deepEqual(ioErrorToRpc(err('ELOOP')).toWire(), { code: -32603, message: 'Symbolic link loop (os error 40)' });
  assert.deepEqual(ioErrorToRpc(new Error('plain')).toWire(), { code: -32603, message: 'plain' });
});

describe('the sandbox field (codex answers; security issue 9)', () => {
  const EROFS = { code: -32603, message: 'Read-only file system (os error 30)' };
  const EACCES = { code: -32600, message: 'Permission denied (os error 13)' };
  let sb = '';
  const at = (rel = '') => pathToFileURL(join(sb, rel)).href;
  const entry = (rel: string, access: string) => ({ path: { type: 'path', path: at(rel) }, access });
  /** Root readable, `ws` writable (with its .git/.vscode/.codex carve-outs), `ws/denied` and `out/s.txt` denied. */
  const sandbox = () => ({
    cwd: at('ws'),
    windowsSandboxLevel: 'disabled',
    permissions: {
      type: 'managed',
      network: 'restricted',
      file_system: {
        type: 'restricted',
        entries: [
          { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
          entry('ws', 'write'),
          entry('ws/denied', 'deny'),
          entry('out/s.txt', 'deny'),
        ],
      },
    },
  });
  const s = (params: Record<string, unknown>) => ({ ...params, sandbox: sandbox() });
  const read = (rel: string) => fs.readFileSync(join(sb, rel), 'utf8');

  before(() => {
    sb = mkdtempSync(join(root, 'sb-'));
    for (const d of ['ws/.git', 'ws/sub/deep', 'ws/denied', 'ws/tree/inner', 'out']) fs.mkdirSync(join(sb, d), { recursive: true });
    fs.writeFileSync(join(sb, 'ws/a.txt'), 'a');
    fs.writeFileSync(join(sb, 'ws/.git/config'), 'cfg');
    fs.writeFileSync(join(sb, 'ws/denied/x'), 'denied');
    fs.writeFileSync(join(sb, 'ws/tree/inner/f'), 'f');
    fs.writeFileSync(join(sb, 'out/s.txt'), 'secret');
    fs.writeFileSync(join(sb, 'out/o.txt'), 'outside');
    fs.symlinkSync(join(sb, 'out'), join(sb, 'ws/linkout'));
    fs.symlinkSync('../out/o.txt', join(sb, 'ws/linkfile'));
    fs.symlinkSync('../out/new.txt', join(sb, 'ws/dangling'));
    fs.symlinkSync('a.txt', join(sb, 'ws/linkin'));
  });
  // Only there if a write was not refused.
  after(() => fs.rmSync('/etc/eb-fs-sandbox-unit', { force: true }));

  test('writes inside the writable root work, through links that stay inside', async () => {
    assert.deepEqual(await call('fs/writeFile', s({ path: at('ws/new.txt'), dataBase64: b64('n') })), {});
    assert.deepEqual(await call('fs/writeFile', s({ path: at('ws/linkin'), dataBase64: b64('via link') })), {});
    assert.equal(read('ws/a.txt'), 'via link');
    assert.deepEqual(await call('fs/createDirectory', s({ path: at('ws/c1/c2') })), {});
    assert.ok(fs.statSync(join(sb, 'ws/c1/c2')).isDirectory());
    assert.deepEqual(await call('fs/copy', s({ sourcePath: at('ws/tree'), destinationPath: at('ws/tree2'), recursive: true })), {});
    assert.equal(read('ws/tree2/inner/f'), 'f');
    assert.deepEqual(await call('fs/remove', s({ path: at('ws/tree2') })), {});
    assert.equal(fs.existsSync(join(sb, 'ws/tree2')), false);
    assert.deepEqual(await call('fs/readFile', s({ path: at('out/o.txt') })), { dataBase64: b64('outside') });
  });

  test('writes outside it are EROFS (and change nothing), whatever the path looks like', async () => {
    const d = b64('x');
    for (const path of [
      at('out/new.txt'),
      at('ws/linkout/new.txt'),
      at('ws/linkfile'),
      at('ws/dangling'),
      `${at('ws')}/../out/dots.txt`,
      `${at('ws/sub')}/%2e%2e/%2e%2e/out/dots.txt`,
      'file:///etc/eb-fs-sandbox-unit',
    ]) {
      assert.deepEqual(await fail('fs/writeFile', s({ path, dataBase64: d })), EROFS, path);
    }
    assert.deepEqual(await fail('fs/createDirectory', s({ path: at('out/c1/c2') })), EROFS);
    assert.deepEqual(await fail('fs/remove', s({ path: at('out/o.txt') })), EROFS);
    assert.deepEqual(await fail('fs/remove', s({ path: at('ws') })), EROFS); // the root itself sits in a read-only directory
    assert.deepEqual(await fail('fs/copy', s({ sourcePath: at('ws/a.txt'), destinationPath: at('out/c.txt'), recursive: false })), EROFS);
    assert.deepEqual(await fail('fs/copy', s({ sourcePath: at('ws/tree'), destinationPath: at('ws/linkout/t'), recursive: true })), EROFS);
    assert.deepEqual(await fail('fs/copy', s({ sourcePath: at('ws/linkin'), destinationPath: at('out/l'), recursive: false })), EROFS);
    const ctx = { fileHandles: new FileHandleTable() };
    assert.deepEqual(await fail('fs/open', s({ handleId: 'w', path: at('out/o.txt'), mode: 'replace' }), ctx), EROFS);
    assert.deepEqual(fs.readdirSync(join(sb, 'out')).sort(), ['o.txt', 's.txt']);
    assert.equal(read('out/o.txt'), 'outside'); // not truncated by the refused open
    assert.equal(fs.existsSync('/etc/eb-fs-sandbox-unit'), false);
  });

  test('carve-outs inside the root stay read-only, missing ones cannot be created', async () => {
    assert.deepEqual(await fail('fs/writeFile', s({ path: at('ws/.git/config'), dataBase64: b64('x') })), EROFS);
    assert.deepEqual(await fail('fs/writeFile', s({ path: at('ws/.git/hooks-pre-commit'), dataBase64: b64('x') })), EROFS);
    assert.deepEqual(await fail('fs/remove', s({ path: at('ws/.git') })), EROFS);
    assert.deepEqual(await fail('fs/createDirectory', s({ path: at('ws/.vscode') })), EROFS);
    assert.deepEqual(await fail('fs/copy', s({ sourcePath: at('ws/a.txt'), destinationPath: at('ws/.codex'), recursive: false })), EROFS);
    assert.equal(read('ws/.git/config'), 'cfg');
    assert.equal(fs.existsSync(join(sb, 'ws/.vscode')), false);
    assert.equal(fs.existsSync(join(sb, 'ws/.codex')), false);
  });

  test('a recursive remove or copy that would cross a protected or denied path is refused before it starts', async () => {
    // `ws` itself contains .git: removing ws/sub is fine, removing a tree holding a carve-out is not.
    const strict = { ...sandbox() };
    strict.permissions.file_system.entries.push(entry('ws/tree/inner', 'read'));
    assert.deepEqual(await fail('fs/remove', { path: at('ws/tree'), sandbox: strict }), EROFS);
    assert.equal(read('ws/tree/inner/f'), 'f');
    assert.deepEqual(await fail('fs/copy', s({ sourcePath: at('ws'), destinationPath: at('ws2'), recursive: true })), EACCES); // ws/denied inside
  });

  test('missing parents are ENOENT first, inside and outside', async () => {
    assert.deepEqual(await fail('fs/writeFile', s({ path: at('ws/nodir/x'), dataBase64: b64('x') })), ENOENT);
    assert.deepEqual(await fail('fs/writeFile', s({ path: at('out/nodir/x'), dataBase64: b64('x') })), ENOENT);
    assert.deepEqual(await fail('fs/createDirectory', s({ path: at('ws/n1/n2'), recursive: false })), ENOENT);
    assert.deepEqual(await fail('fs/createDirectory', s({ path: at('out'), recursive: false })), EEXIST);
    assert.deepEqual(await call('fs/createDirectory', s({ path: at('out') })), {});
    assert.deepEqual(await call('fs/remove', s({ path: at('out/missing') })), {});
    assert.deepEqual(await fail('fs/remove', s({ path: at('out/missing'), force: false })), ENOENT);
  });

  test('denied paths are EACCES for every read, also through a link', async () => {
    fs.symlinkSync('denied/x', join(sb, 'ws/todenied'));
    for (const path of [at('ws/denied/x'), at('out/s.txt'), at('ws/todenied')]) {
      assert.deepEqual(await fail('fs/readFile', s({ path })), EACCES, path);
      assert.deepEqual(await fail('fs/getMetadata', s({ path })), EACCES, path);
      assert.deepEqual(await fail('fs/canonicalize', s({ path })), EACCES, path);
      assert.deepEqual(await fail('fs/open', s({ handleId: 'r', path })), EACCES, path);
      if (!path.endsWith('todenied'))
        assert.deepEqual(await fail('fs/copy', s({ sourcePath: path, destinationPath: at('ws/stolen'), recursive: false })), EACCES, path);
    }
    assert.deepEqual(await fail('fs/readDirectory', s({ path: at('ws/denied') })), EACCES);
    assert.equal(fs.existsSync(join(sb, 'ws/stolen')), false);
    // Copying a link copies the link, not what it points to: nothing denied is read.
    assert.deepEqual(await call('fs/copy', s({ sourcePath: at('ws/todenied'), destinationPath: at('ws/stolen'), recursive: false })), {});
    assert.equal(fs.readlinkSync(join(sb, 'ws/stolen')), 'denied/x');
    fs.rmSync(join(sb, 'ws/stolen'));
    const walked = await call(
      'fs/walk',
      s({ path: at('ws'), options: { maxDepth: 2, maxDirectories: 100, maxEntries: 100, followDirectorySymlinks: false } }),
    );
    assert.deepEqual(walked.errors, [{ path: at('ws/denied'), message: 'Permission denied (os error 13)' }]);
    assert.ok(!walked.entries.some((e: { path: string }) => e.path.startsWith(at('ws/denied/'))));
  });

  test('paths an empty-root sandbox cannot see are missing (ENOENT); the system directories stay readable', async () => {
    const cwdOnly = {
      ...sandbox(),
      permissions: {
        type: 'managed',
        network: 'restricted',
        file_system: {
          type: 'restricted',
          entries: [{ path: { type: 'special', value: { kind: 'current_working_directory' } }, access: 'write' }],
        },
      },
    };
    assert.deepEqual(await fail('fs/readFile', { path: at('out/o.txt'), sandbox: cwdOnly }), ENOENT);
    assert.deepEqual(await fail('fs/writeFile', { path: at('out/x'), dataBase64: b64('x'), sandbox: cwdOnly }), ENOENT);
    assert.ok((await call('fs/readFile', { path: 'file:///etc/hostname', sandbox: cwdOnly })).dataBase64);
    assert.deepEqual(await call('fs/readFile', { path: at('ws/new.txt'), sandbox: cwdOnly }), { dataBase64: b64('n') });
  });

  test('invalid, unsupported and unrestricted sandbox values', async () => {
    assert.deepEqual(await fail('fs/readFile', { path: at('ws/a.txt'), sandbox: {} }), {
      code: -32602,
      message: 'missing field `permissions`',
    });
    assert.equal((await fail('fs/readFile', { path: at('ws/a.txt'), sandbox: 5 })).code, -32602);
    const noCwd = {
      ...sandbox(),
      cwd: undefined,
      permissions: {
        ...sandbox().permissions,
        file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'project_roots' } }, access: 'write' }] },
      },
    };
    assert.deepEqual(await fail('fs/readFile', { path: at('ws/a.txt'), sandbox: noCwd }), {
      code: -32602,
      message: 'file system sandbox context with dynamic permissions requires cwd',
    });
    const glob = {
      ...sandbox(),
      permissions: {
        ...sandbox().permissions,
        file_system: { type: 'restricted', entries: [{ path: { type: 'glob_pattern', pattern: '**/*.env' }, access: 'deny' }] },
      },
    };
    const g = await fail('fs/readFile', { path: at('ws/a.txt'), sandbox: glob });
    assert.equal(g.code, -32603);
    assert.match(g.message, /^sandbox unavailable: glob_pattern/);
    for (const open of [
      { type: 'disabled' },
      { type: 'managed', network: 'restricted', file_system: { type: 'unrestricted' } },
      { type: 'external', network: 'restricted' },
    ]) {
      assert.deepEqual(
        await call('fs/writeFile', {
          path: at('out/open.txt'),
          dataBase64: b64('o'),
          sandbox: { windowsSandboxLevel: 'disabled', permissions: open },
        }),
        {},
      );
    }
    assert.deepEqual(await call('fs/writeFile', { path: at('out/open.txt'), dataBase64: b64('o'), sandbox: null }), {});
    fs.rmSync(join(sb, 'out/open.txt'));
  });
});

describe('fs/readFile bounds the bytes it reads, not what stat says (security issue 9)', () => {
  test('an endless size-0 procfs file fails fast with the too-large error', async () => {
    const t0 = Date.now();
    const e = await fail('fs/readFile', { path: 'file:///proc/self/pagemap' });
    assert.equal(e.code, -32603);
    assert.match(e.message, /^file is too large to return in one message \(more than 268435456 bytes;/);
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
  });

  test('small size-0 procfs files are read whole; devices are refused without reading', async () => {
    const status = Buffer.from((await call('fs/readFile', { path: 'file:///proc/self/status' })).dataBase64, 'base64').toString();
    assert.match(status, /^Name:/);
    assert.match(status, /\nVmRSS:/); // past the first line: more than one read's worth is fine
    assert.deepEqual(await fail('fs/readFile', { path: 'file:///dev/zero' }), { code: -32600, message: 'path `/dev/zero` is not a file' });
  });
});
