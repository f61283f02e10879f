import assert from 'node:assert/strict';
import { posix } from 'node:path';
import { test } from 'node:test';
import type { ClientWatch, FsWatchEvent, WatchRequest } from '../../../src/client/fsWatch';
import {
  DEFAULT_POLL_LIMITS,
  ExecutorChanges,
  ExecutorFilePoller,
  watchExcludes,
  type FileChange,
  type PolledFiles,
  type WatchSource,
} from '../../../src/core/executorChanges';
import type { FileStat } from '../../../src/core/executorFiles';
import { ExecutorFsError } from '../../../src/core/fsErrors';
import { Emitter } from '../../../src/util/emitter';
import { FakeClock } from '../../helpers/fakeClock';

/** An executor's files as a map: directories are `null`, files their content. Counts calls. */
class FakeFiles implements PolledFiles {
  readonly tree = new Map<string, string | null>();
  calls = 0;
  private t = 1;
  write(path: string, content: string): void {
    for (let d = posix.dirname(path); d !== '/'; d = posix.dirname(d)) if (!this.tree.has(d)) this.tree.set(d, null);
    this.tree.set(path, content);
    this.mtimes.set(path, ++this.t);
  }
  mkdir(path: string): void {
    this.tree.set(path, null);
  }
  remove(path: string): void {
    for (const k of [...this.tree.keys()]) if (k === path || k.startsWith(`${path}/`)) this.tree.delete(k);
  }
  private readonly mtimes = new Map<string, number>();
  async stat(path: string): Promise<FileStat> {
    this.calls++;
    const v = this.tree.get(path);
    if (v === undefined) throw new ExecutorFsError('FileNotFound', `${path} does not exist`);
    return {
      kind: v === null ? 'directory' : 'file',
      symlink: false,
      size: v?.length ?? 0,
      ctimeMs: 0,
      mtimeMs: this.mtimes.get(path) ?? 0,
    };
  }
  async readDirectory(path: string) {
    this.calls++;
    return [...this.tree.keys()]
      .filter((k) => posix.dirname(k) === path && k !== path)
      .map((k) => ({ fileName: posix.basename(k), isDirectory: this.tree.get(k) === null, isFile: this.tree.get(k) !== null }));
  }
  names(path: string): string[] {
    return [...this.tree.keys()].filter((k) => posix.dirname(k) === path && k !== path).map((k) => posix.basename(k));
  }
}

const show = (changes: FileChange[]) => changes.map((c) => `${c.type} ${c.path}`).sort();

test('polling looks at expanded folders and open files, not only watched roots (codex: no server watches)', async () => {
  const files = new FakeFiles();
  files.write('/p/top.txt', 'a');
  files.write('/p/sub/deeper/nested.txt', 'n1');
  const poller = new ExecutorFilePoller(files, () => true, { ...DEFAULT_POLL_LIMITS, intervalMs: 60_000 });
  poller.watch('/p');
  // The Explorer expanded /p/sub/deeper; an editor has nested.txt open.
  poller.listed('/p/sub/deeper', files.names('/p/sub/deeper'));
  poller.touched('/p/sub/deeper/nested.txt', await files.stat('/p/sub/deeper/nested.txt'));
  await poller.pollOnce();
  files.write('/p/sub/deeper/new.txt', 'x');
  files.write('/p/sub/deeper/nested.txt', 'n2, longer');
  assert.deepEqual(show(await poller.pollOnce()), ['changed /p/sub/deeper/nested.txt', 'created /p/sub/deeper/new.txt']);
  poller.dispose();
});

test('a round looks at maxPerRound paths at most and the next goes on from there: every path in turn', async () => {
  const files = new FakeFiles();
  const poller = new ExecutorFilePoller(files, () => true, { ...DEFAULT_POLL_LIMITS, intervalMs: 60_000, maxPerRound: 4 });
  for (let i = 0; i < 10; i++) {
    files.write(`/f${i}`, 'v1');
    poller.touched(`/f${i}`, await files.stat(`/f${i}`));
  }
  files.calls = 0;
  for (let round = 0; round < 3; round++) await poller.pollOnce();
  assert.equal(files.calls, 12, 'three rounds of 4 stats');
  for (let i = 0; i < 10; i++) files.write(`/f${i}`, 'v2, changed');
  const seen = new Set<string>();
  poller.onDidChange((c) => c.forEach((x) => seen.add(x.path)));
  // Ten changed files, four a round: all reported within three rounds.
  for (let round = 0; round < 3; round++) await poller.pollOnce();
  assert.equal(seen.size, 10);
  poller.dispose();
});

test('the poller is rate bounded: one round per interval after the previous ended, none while not connected', async () => {
  const clock = new FakeClock();
  const files = new FakeFiles();
  files.write('/f', 'v');
  let connected = false;
  const poller = new ExecutorFilePoller(files, () => connected, { ...DEFAULT_POLL_LIMITS, intervalMs: 2000 }, clock);
  poller.touched('/f');
  files.calls = 0;
  clock.advance(10_000);
  assert.equal(files.calls, 0, 'nothing while not connected');
  connected = true;
  for (let i = 0; i < 5; i++) {
    clock.advance(2000);
    await new Promise((r) => setImmediate(r));
  }
  assert.ok(files.calls >= 4 && files.calls <= 5, `${files.calls} stats in 10 s`);
  poller.dispose();
  assert.equal(clock.pendingTimers, 0);
});

/** A fake of the server's watches (client/fsWatch.ts), answering at once. */
class FakeSource implements WatchSource {
  supported = true;
  truncate = false;
  readonly watches: Array<ClientWatch & { request: WatchRequest; disposed: boolean }> = [];
  readonly changes = new Emitter<FsWatchEvent>();
  readonly onDidChange = this.changes.event;
  readonly reconnects = new Emitter<void>();
  readonly onDidReconnect = this.reconnects.event;
  watch(request: WatchRequest): ClientWatch {
    const truncated = this.truncate;
    const w = {
      request,
      disposed: false,
      get covered() {
        return !this.disposed && !truncated;
      },
      result: { watchId: 'x', directories: 1, truncated },
      error: undefined,
      ready: Promise.resolve(),
      dispose() {
        this.disposed = true;
      },
    };
    this.watches.push(w);
    return w;
  }
  emit(w: ClientWatch, changes: FileChange[], overflow = false): void {
    this.changes.fire({ watch: w, changes, overflow });
  }
  dispose(): void {}
}

function tracker(source: WatchSource | undefined, files = new FakeFiles()) {
  const got: FileChange[] = [];
  const changes = new ExecutorChanges(files, {
    canPoll: () => true,
    source: () => source,
    limits: { ...DEFAULT_POLL_LIMITS, intervalMs: 60_000 },
    clock: new FakeClock(),
  });
  changes.onDidChange((c) => got.push(...c));
  return { changes, files, got };
}

test('a server watch covers its tree: what it reports goes out, and polling leaves covered paths alone', async () => {
  const source = new FakeSource();
  const { changes, files, got } = tracker(source);
  files.write('/p/a.txt', '1');
  files.write('/p/node_modules/x/i.js', '1');
  changes.watch('/p', { recursive: true, excludes: ['**/node_modules/**'] });
  assert.equal(source.watches.length, 1);
  assert.deepEqual(source.watches[0]!.request, { path: '/p', recursive: true, excludes: ['node_modules'] });
  await source.watches[0]!.ready;
  changes.touched('/p/a.txt');
  changes.listed('/p/node_modules/x', files.names('/p/node_modules/x'));
  assert.equal(changes.covered('/p/a.txt'), true);
  assert.equal(changes.covered('/p'), true);
  assert.equal(changes.covered('/p/node_modules'), false, 'an excluded folder is polled when it is listed');
  assert.equal(changes.covered('/p/node_modules/x/i.js'), false);
  assert.equal(changes.covered('/elsewhere'), false);
  assert.deepEqual(changes.poller.targets(), ['/p/node_modules/x'], 'only what the server does not watch is polled');
  source.emit(source.watches[0]!, [{ type: 'created', path: '/p/b.txt' }]);
  assert.deepEqual(show(got), ['created /p/b.txt']);
  changes.dispose();
  assert.equal(source.watches[0]!.disposed, true, 'the server watch ends with the tracker');
});

test('on a server without watches (codex) everything is polled: the fallback', async () => {
  const source = new FakeSource();
  source.supported = false;
  const { changes, files, got } = tracker(source);
  files.write('/p/a.txt', '1');
  changes.watch('/p', { recursive: true });
  assert.equal(source.watches.length, 0, 'nothing is asked of the server');
  changes.listed('/p', files.names('/p'));
  assert.equal(changes.covered('/p'), false);
  files.write('/p/new.txt', 'n');
  await changes.poller.pollOnce();
  assert.deepEqual(show(got), ['created /p/new.txt']);
  changes.dispose();
});

test('a truncated server watch (too big a tree) leaves its tree to polling', async () => {
  const source = new FakeSource();
  source.truncate = true;
  const { changes } = tracker(source);
  changes.watch('/huge', { recursive: true });
  await source.watches[0]!.ready;
  changes.listed('/huge/deep', []);
  assert.equal(changes.covered('/huge/deep'), false);
  assert.deepEqual(changes.poller.targets().sort(), ['/huge', '/huge/deep']);
  changes.dispose();
});

test('an overflow, or a new connection, looks at everything known again and reports what differs', async () => {
  const source = new FakeSource();
  const { changes, files, got } = tracker(source);
  files.write('/p/a.txt', '1');
  changes.watch('/p', { recursive: true });
  await source.watches[0]!.ready;
  changes.listed('/p', files.names('/p'));
  changes.touched('/p/a.txt', await files.stat('/p/a.txt'));
  files.write('/p/burst1', 'x');
  files.write('/p/a.txt', '22');
  source.emit(source.watches[0]!, [], true);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(show(got), ['changed /p/a.txt', 'created /p/burst1']);
  got.length = 0;
  // The connection came back (a resume): what changed meanwhile is found.
  files.remove('/p/burst1');
  source.reconnects.fire();
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(show(got), ['deleted /p/burst1']);
  changes.dispose();
});

test('events the server reported are not reported again by a later look', async () => {
  const source = new FakeSource();
  const { changes, files, got } = tracker(source);
  changes.watch('/p', { recursive: true });
  await source.watches[0]!.ready;
  changes.listed('/p', []);
  files.write('/p/n.txt', 'x');
  source.emit(source.watches[0]!, [{ type: 'created', path: '/p/n.txt' }]);
  await changes.poller.rescan();
  assert.deepEqual(show(got), ['created /p/n.txt'], 'once, not twice');
  changes.dispose();
});

test('a new client (Reconnect) gets the watches again; the old ones end', async () => {
  let source: FakeSource | undefined = new FakeSource();
  const first = source;
  const files = new FakeFiles();
  const changes = new ExecutorChanges(files, { canPoll: () => true, source: () => source, clock: new FakeClock() });
  changes.watch('/p', { recursive: false });
  assert.equal(first.watches.length, 1);
  source = new FakeSource();
  changes.connected();
  assert.equal(first.watches[0]!.disposed, true);
  assert.equal(source.watches.length, 1);
  // The same client connected again (its own watch client re-watches): nothing new.
  changes.connected();
  assert.equal(source.watches.length, 1);
  changes.dispose();
});

test("VS Code's watcher excludes become directory names and tails; other globs are left out", () => {
  assert.deepEqual(
    watchExcludes([
      '**/.git/objects/**',
      '**/.git/subtree-cache/**',
      '**/node_modules/*/**',
      '**/.hg/store/**',
      '**/*.log',
      '{a,b}/**',
      'dist/**',
    ]),
    ['.git/objects', '.git/subtree-cache', 'node_modules/*', '.hg/store', 'dist'],
  );
  assert.deepEqual(watchExcludes(undefined), []);
});
