/**
 * The file operations behind `execbridge://` (core/executorFiles.ts) against real servers, ours and
 * `codex exec-server`: block reads and writes of files bigger than a frame (every frame on the wire
 * measured), rename by copy + remove, the errors VS Code needs, and change polling.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient, websocketConnector, type Connector } from '../../src/client';
import { ExecutorFilePoller } from '../../src/core/executorChanges';
import { BLOCK_SIZE, ExecutorFiles } from '../../src/core/executorFiles';
import { classifyFsError } from '../../src/core/fsErrors';
import { ObservedConnection } from '../helpers/observedConnection';
import { startExecServer, type ExecServerProcess } from '../helpers/servers';

/** A real connection whose largest frame in each direction is recorded. */
class MeasuredConnection extends ObservedConnection {
  maxSent = 0;
  maxReceived = 0;
  /** `fs/readBlock` and `fs/writeBlock` requests sent and not yet answered: now, and the most at once. */
  private readBlocks = new Set<unknown>();
  maxReadBlocksInFlight = 0;
  private writeBlocks = new Set<unknown>();
  maxWriteBlocksInFlight = 0;
  protected received(text: string): void {
    this.maxReceived = Math.max(this.maxReceived, Buffer.byteLength(text));
    const { id } = JSON.parse(text) as { id?: unknown };
    this.readBlocks.delete(id);
    this.writeBlocks.delete(id);
  }
  protected sent(text: string): void {
    this.maxSent = Math.max(this.maxSent, Buffer.byteLength(text));
    const m = JSON.parse(text) as { id?: unknown; method?: string };
    if (m.method === 'fs/readBlock') {
      this.readBlocks.add(m.id);
      this.maxReadBlocksInFlight = Math.max(this.maxReadBlocksInFlight, this.readBlocks.size);
    }
    if (m.method === 'fs/writeBlock') {
      this.writeBlocks.add(m.id);
      this.maxWriteBlocksInFlight = Math.max(this.maxWriteBlocksInFlight, this.writeBlocks.size);
    }
  }
}

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return classifyFsError(e).code;
  }
  assert.fail('expected a failure');
}

for (const kind of ['ours', 'codex'] as const) {
  describe(`executor files against ${kind}`, () => {
    let server: ExecServerProcess;
    let client: ExecServerClient;
    let measured: MeasuredConnection | undefined;
    let files: ExecutorFiles;
    let dir: string;

    before(async () => {
      dir = fs.mkdtempSync(join(tmpdir(), 'exec-bridge-files-'));
      server = await startExecServer(kind, { token: true });
      const ws = websocketConnector(server.url, server.token);
      const connector: Connector = async (signal) => (measured = new MeasuredConnection(await ws(signal)));
      client = await ExecServerClient.connect({ connector, clientName: 'executor-files-test' });
      files = new ExecutorFiles(async () => client);
    });
    after(async () => {
      client?.dispose();
      await server?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    test('a file bigger than a frame is read and written in blocks, never as one big frame', async () => {
      const big = randomBytes(3 * BLOCK_SIZE + 12345);
      const src = join(dir, 'big.bin');
      fs.writeFileSync(src, big);
      measured!.maxReceived = 0;
      measured!.maxReadBlocksInFlight = 0;
      const read = await files.readFile(src);
      assert.equal(Buffer.compare(Buffer.from(read), big), 0);
      // A 1 MiB block is about 1.4 MB of base64; the whole file would be 4.2 MB.
      assert.ok(measured!.maxReceived < 1.5 * BLOCK_SIZE, `largest frame received: ${measured!.maxReceived}`);
      // The blocks are asked for ahead (one round trip per few blocks, not per block), a bounded few at once.
      assert.equal(measured!.maxReadBlocksInFlight, 4, 'readBlock requests in flight at once');
      // Files that end on a block boundary, one byte past what a single readFile takes, one byte short of 5 blocks.
      for (const size of [2 * BLOCK_SIZE, BLOCK_SIZE + 1, 5 * BLOCK_SIZE - 1]) {
        const exact = randomBytes(size);
        fs.writeFileSync(src, exact);
        assert.equal(Buffer.compare(Buffer.from(await files.readFile(src)), exact), 0, `${size} bytes`);
      }

      const dst = join(dir, 'big.copy');
      measured!.maxSent = 0;
      measured!.maxWriteBlocksInFlight = 0;
      await files.writeFile(dst, big, { create: true, overwrite: false });
      assert.equal(Buffer.compare(fs.readFileSync(dst), big), 0);
      assert.ok(measured!.maxSent < 1.5 * BLOCK_SIZE, `largest frame sent: ${measured!.maxSent}`);
      assert.equal(measured!.maxWriteBlocksInFlight, 4, 'writeBlock requests in flight at once');
      // Overwriting with something longer, then with a size on a block boundary: exact each time.
      for (const size of [6 * BLOCK_SIZE + 3, 2 * BLOCK_SIZE]) {
        const other = randomBytes(size);
        await files.writeFile(dst, other, { create: false, overwrite: true });
        assert.equal(Buffer.compare(fs.readFileSync(dst), other), 0, `${size} bytes`);
      }
      // Overwriting with something shorter truncates.
      await files.writeFile(dst, Buffer.from('short'), { create: false, overwrite: true });
      assert.equal(fs.readFileSync(dst, 'utf8'), 'short');
    });

    test('rename moves files and folders (copy + remove), and refuses what VS Code expects refused', async () => {
      const a = join(dir, 'r', 'a.txt');
      fs.mkdirSync(join(dir, 'r', 'sub', 'deep'), { recursive: true });
      fs.writeFileSync(a, 'A');
      fs.writeFileSync(join(dir, 'r', 'sub', 'deep', 'x'), 'X');
      await files.rename(a, join(dir, 'r', 'b.txt'), { overwrite: false });
      assert.equal(fs.existsSync(a), false);
      assert.equal(fs.readFileSync(join(dir, 'r', 'b.txt'), 'utf8'), 'A');
      await files.rename(join(dir, 'r', 'sub'), join(dir, 'r', 'moved'), { overwrite: false });
      assert.equal(fs.readFileSync(join(dir, 'r', 'moved', 'deep', 'x'), 'utf8'), 'X');
      assert.equal(fs.existsSync(join(dir, 'r', 'sub')), false);

      fs.writeFileSync(join(dir, 'r', 'c.txt'), 'C');
      assert.equal(await failure(files.rename(join(dir, 'r', 'c.txt'), join(dir, 'r', 'b.txt'), { overwrite: false })), 'FileExists');
      await files.rename(join(dir, 'r', 'c.txt'), join(dir, 'r', 'b.txt'), { overwrite: true });
      assert.equal(fs.readFileSync(join(dir, 'r', 'b.txt'), 'utf8'), 'C');
      assert.equal(await failure(files.rename(join(dir, 'r', 'missing'), join(dir, 'r', 'z'), { overwrite: false })), 'FileNotFound');
      assert.equal(
        await failure(files.rename(join(dir, 'r', 'b.txt'), join(dir, 'r', 'nodir', 'z'), { overwrite: false })),
        'FileNotFound',
      );
      assert.equal(
        await failure(files.rename(join(dir, 'r', 'moved'), join(dir, 'r', 'moved', 'in'), { overwrite: false })),
        'NoPermissions',
      );

      await files.copy(join(dir, 'r', 'moved'), join(dir, 'r', 'copied'), { overwrite: false });
      assert.equal(fs.readFileSync(join(dir, 'r', 'copied', 'deep', 'x'), 'utf8'), 'X');
      assert.equal(fs.existsSync(join(dir, 'r', 'moved')), true);
    });

    test('errors map to the codes VS Code needs', async () => {
      fs.mkdirSync(join(dir, 'e', 'full'), { recursive: true });
      fs.writeFileSync(join(dir, 'e', 'full', 'f'), 'f');
      fs.writeFileSync(join(dir, 'e', 'file'), 'f');
      assert.equal(await failure(files.stat(join(dir, 'e', 'missing'))), 'FileNotFound');
      assert.equal(await failure(files.readFile(join(dir, 'e', 'missing'))), 'FileNotFound');
      assert.equal(await failure(files.readFile(join(dir, 'e'))), 'FileIsADirectory');
      assert.equal(await failure(files.readDirectory(join(dir, 'e', 'file'))), 'FileNotADirectory');
      assert.equal(await failure(files.createDirectory(join(dir, 'e', 'full'))), 'FileExists');
      assert.equal(await failure(files.createDirectory(join(dir, 'e', 'no', 'parent'))), 'FileNotFound');
      assert.equal(
        await failure(files.writeFile(join(dir, 'e', 'new'), Buffer.from('x'), { create: false, overwrite: true })),
        'FileNotFound',
      );
      assert.equal(
        await failure(files.writeFile(join(dir, 'e', 'file'), Buffer.from('x'), { create: true, overwrite: false })),
        'FileExists',
      );
      assert.equal(
        await failure(files.writeFile(join(dir, 'e', 'full'), Buffer.from('x'), { create: true, overwrite: true })),
        'FileIsADirectory',
      );
      assert.equal(await failure(files.delete(join(dir, 'e', 'full'), { recursive: false })), 'Unknown');
      assert.equal(fs.existsSync(join(dir, 'e', 'full', 'f')), true);
      fs.mkdirSync(join(dir, 'e', 'locked'));
      fs.chmodSync(join(dir, 'e', 'locked'), 0o500);
      try {
        // root ignores mode bits: only check where they apply.
        if (process.getuid?.() !== 0) {
          assert.equal(
            await failure(files.writeFile(join(dir, 'e', 'locked', 'x'), Buffer.from('x'), { create: true, overwrite: true })),
            'NoPermissions',
          );
        }
      } finally {
        fs.chmodSync(join(dir, 'e', 'locked'), 0o700);
      }
      await files.delete(join(dir, 'e', 'full'), { recursive: true });
      assert.equal(fs.existsSync(join(dir, 'e', 'full')), false);
      assert.equal(await failure(files.readFile('relative/path')), 'FileNotFound');
      assert.equal(await failure(files.delete('/', { recursive: true })), 'NoPermissions');
      const entries = await files.readDirectory(join(dir, 'e'));
      assert.deepEqual(
        entries.map((e) => [e.fileName, e.isDirectory]),
        [
          ['file', false],
          ['locked', true],
        ],
      );
    });

    test('the poller reports files created, changed and deleted on the executor', async () => {
      const w = join(dir, 'watched');
      fs.mkdirSync(w);
      fs.writeFileSync(join(w, 'keep.txt'), 'one');
      const poller = new ExecutorFilePoller(files, () => true, {
        intervalMs: 60_000,
        maxWatched: 8,
        maxRecentFiles: 8,
        maxListedDirs: 8,
        maxEntries: 100,
        maxPerRound: 16,
      });
      try {
        const stop = poller.watch(w);
        poller.touched(join(w, 'keep.txt'), await files.stat(join(w, 'keep.txt')));
        assert.deepEqual(await poller.pollOnce(), []);
        fs.writeFileSync(join(w, 'new.txt'), 'n');
        fs.writeFileSync(join(w, 'keep.txt'), 'two, longer');
        const seen: unknown[] = [];
        poller.onDidChange((c) => seen.push(...c));
        const changes = await poller.pollOnce();
        assert.deepEqual(changes.map((c) => `${c.type} ${c.path.slice(w.length)}`).sort(), ['changed /keep.txt', 'created /new.txt']);
        assert.deepEqual(seen, changes);
        fs.rmSync(join(w, 'keep.txt'));
        assert.deepEqual((await poller.pollOnce()).map((c) => `${c.type} ${c.path.slice(w.length)}`).sort(), ['deleted /keep.txt']);
        stop();
        assert.deepEqual(poller.targets(), [join(w, 'keep.txt')]);
      } finally {
        poller.dispose();
      }
    });
  });
}
