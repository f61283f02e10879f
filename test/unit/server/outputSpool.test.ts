import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { SPOOL_DIR_PREFIX, type OutputSpool } from '../../../src/server/outputSpool';
import { SpoolStore } from '../../../src/server/spoolStore';
import { privateDir } from '../../../src/util/privateDir';

/** Chunk `seq`'s bytes: its seq repeated, so a misplaced byte shows. */
const bytes = (seq: number, n: number) => Buffer.alloc(n, seq % 251);

/** Every chunk spooled after `afterSeq`, page by page. */
async function readAll(s: OutputSpool, afterSeq: number, page: number): Promise<Array<{ seq: number; data: Buffer }>> {
  const out: Array<{ seq: number; data: Buffer }> = [];
  let after = afterSeq;
  for (let i = 0; i < 100_000; i++) {
    const r = await s.read(after, page);
    if (r.chunks.length === 0) break;
    for (const c of r.chunks) out.push({ seq: c.seq, data: Buffer.from(c.chunk, 'base64') });
    assert.ok(r.nextSeq > after + 1 || r.chunks.length > 0);
    after = r.nextSeq - 1;
  }
  return out;
}

test('OutputSpool: records come back byte-exact with their seqs, across segments, from any seq, in bounded pages', async () => {
  const store = new SpoolStore({ processBytes: 1 << 30, totalBytes: 1 << 30, segmentBytes: 100_000 });
  const s = store.create()!;
  const sizes: number[] = [];
  // Seqs 1..400 but every 7th (an exit-like seq that is not output); sizes from 1 byte to 40 KiB.
  for (let seq = 1; seq <= 400; seq++) {
    if (seq % 7 === 0) continue;
    const n = 1 + ((seq * 7919) % 40_000);
    sizes[seq] = n;
    s.append(seq, seq % 2 ? 'stdout' : 'stderr', bytes(seq, n));
  }
  const all = await readAll(s, 0, 64 * 1024);
  assert.deepEqual(
    all.map((c) => c.seq),
    sizes.flatMap((n, seq) => (n ? [seq] : [])),
  );
  for (const c of all) assert.ok(c.data.equals(bytes(c.seq, sizes[c.seq]!)), `chunk ${c.seq}`);
  // From the middle, and a page is at least one chunk but never more than the budget otherwise.
  const page = await s.read(200, 10);
  assert.deepEqual(
    page.chunks.map((c) => c.seq),
    [201],
  );
  assert.equal(page.nextSeq, 202);
  const mid = await s.read(199, 100_000);
  assert.ok(mid.chunks.reduce((t, c) => t + Buffer.from(c.chunk, 'base64').length, 0) <= 100_000);
  assert.equal(mid.chunks[0]!.seq, 200);
  assert.equal((await s.read(400, 1000)).chunks.length, 0);
  await store.dispose();
});

test('OutputSpool: trimTo drops the oldest whole records, counts them, and removes segments wholly before the start', async () => {
  const store = new SpoolStore({ processBytes: 1 << 30, totalBytes: 1 << 30, segmentBytes: 64 * 1024 });
  const s = store.create()!;
  for (let seq = 1; seq <= 100; seq++) s.append(seq, 'stdout', bytes(seq, 10_000));
  await s.read(0, 1); // everything written
  const dir = store.directory!;
  const files = () => readdirSync(dir).length;
  const before = files();
  s.trimTo(300_000);
  assert.ok(s.retainedBytes <= 300_000, `${s.retainedBytes}`);
  // The trim granularity is one index entry: at most 16 KiB plus one record below the goal.
  assert.ok(s.retainedBytes > 300_000 - 16 * 1024 - 10_000, `${s.retainedBytes}`);
  assert.equal(store.retainedBytes, s.retainedBytes);
  const left = await readAll(s, 0, 1 << 20);
  assert.equal(left.length * 10_000, s.retainedBytes);
  assert.equal(left.at(-1)!.seq, 100);
  assert.equal(left[0]!.seq, s.firstSeq);
  for (const c of left) assert.ok(c.data.equals(bytes(c.seq, 10_000)));
  // Removal runs on the write chain: a read waits for it.
  await s.read(99, 1);
  assert.ok(files() < before, `${files()} files, were ${before}`);
  s.trimTo(0);
  assert.equal(s.retainedBytes, 0);
  assert.equal(s.firstSeq, undefined);
  assert.equal((await s.read(0, 1000)).chunks.length, 0);
  // It spools on after being emptied.
  s.append(101, 'stdout', bytes(101, 5));
  assert.deepEqual(
    (await readAll(s, 0, 1000)).map((c) => c.seq),
    [101],
  );
  await store.dispose();
});

test('SpoolStore: over the total, the oldest bytes of the processes that finished first go first, then the oldest running ones', async () => {
  const store = new SpoolStore({ processBytes: 1 << 30, totalBytes: 1_000_000, segmentBytes: 64 * 1024 });
  const a = store.create()!; // started first, finishes second
  const b = store.create()!; // finishes first
  const c = store.create()!; // still running
  for (let seq = 1; seq <= 30; seq++) for (const s of [a, b, c]) s.append(seq, 'stdout', bytes(seq, 10_000));
  assert.equal(store.retainedBytes, 900_000);
  b.finished();
  a.finished();
  // 300 KB more from c: b (finished first) loses its oldest bytes, then a if needed; c is untouched.
  for (let seq = 31; seq <= 50; seq++) c.append(seq, 'stdout', bytes(seq, 10_000));
  assert.ok(store.retainedBytes <= 1_000_000, `${store.retainedBytes}`);
  assert.equal(c.retainedBytes, 500_000);
  assert.equal(a.retainedBytes, 300_000);
  assert.ok(b.retainedBytes < 300_000 && b.retainedBytes >= 300_000 - 200_000 - 26_000, `${b.retainedBytes}`);
  // What b keeps is its newest records.
  const kept = await readAll(b, 0, 1 << 20);
  assert.equal(kept.at(-1)!.seq, 30);
  assert.equal(kept.length * 10_000, b.retainedBytes);
  // Much more: b is emptied, then a, and only then c's oldest.
  for (let seq = 51; seq <= 150; seq++) c.append(seq, 'stdout', bytes(seq, 10_000));
  assert.equal(b.retainedBytes, 0);
  assert.equal(a.retainedBytes, 0);
  assert.ok(c.retainedBytes <= 1_000_000 && c.retainedBytes > 1_000_000 - 26_000, `${c.retainedBytes}`);
  assert.equal((await readAll(c, 0, 1 << 20)).at(-1)!.seq, 150);
  await store.dispose();
});

test('SpoolStore: files are 0600 in a 0700 directory of the private directory, gone on release and on dispose', async () => {
  const store = new SpoolStore({ segmentBytes: 1000 });
  const s = store.create()!;
  const t = store.create()!;
  for (let seq = 1; seq <= 10; seq++) {
    s.append(seq, 'pty', bytes(seq, 500));
    t.append(seq, 'pty', bytes(seq, 500));
  }
  await s.read(0, 1);
  await t.read(0, 1);
  const dir = store.directory!;
  assert.equal(join(dir, '..'), privateDir());
  assert.ok(dir.split('/').at(-1)!.startsWith(`${SPOOL_DIR_PREFIX}${process.pid}-`));
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const names = readdirSync(dir);
  assert.ok(names.length >= 4, names.join());
  for (const n of names) assert.equal(statSync(join(dir, n)).mode & 0o777, 0o600, n);
  await s.release();
  assert.equal(readdirSync(dir).length, names.length - names.filter((n) => n.startsWith('1-')).length);
  assert.equal(store.retainedBytes, t.retainedBytes);
  await store.dispose();
  assert.equal(existsSync(dir), false);
});

test('SpoolStore: a start removes the spool directories of dead servers and keeps those of live ones', () => {
  const dead = join(privateDir(), `${SPOOL_DIR_PREFIX}999999999-abcdef`);
  const live = join(privateDir(), `${SPOOL_DIR_PREFIX}${process.pid}-keepme`);
  mkdirSync(dead, { recursive: true, mode: 0o700 });
  mkdirSync(live, { recursive: true, mode: 0o700 });
  try {
    new SpoolStore();
    assert.equal(existsSync(dead), false);
    assert.equal(existsSync(live), true);
  } finally {
    for (const d of [dead, live]) rmSync(d, { recursive: true, force: true });
  }
});

test('SpoolStore: caps must be non-negative integers; 0 turns the spool off', () => {
  assert.throws(() => new SpoolStore({ processBytes: -1 }), /processBytes must be a non-negative integer/);
  assert.throws(() => new SpoolStore({ totalBytes: 1.5 }), /totalBytes must be a non-negative integer/);
  assert.equal(new SpoolStore({ processBytes: 0 }).create(), undefined);
});

test('SpoolStore: on a file system with little room (a tmpfs runtime directory) the cap is half its free space, and says so', async () => {
  const lines: string[] = [];
  const store = new SpoolStore({ processBytes: 1 << 30, totalBytes: 1 << 30, segmentBytes: 64 * 1024, freeBytes: () => 600_000 }, (l) =>
    lines.push(l),
  );
  assert.equal(store.effectiveTotalBytes, 1 << 30, 'nothing measured before the first spooled byte');
  const s = store.create()!;
  for (let seq = 1; seq <= 60; seq++) s.append(seq, 'stdout', bytes(seq, 10_000));
  assert.equal(store.effectiveTotalBytes, 300_000);
  assert.ok(store.retainedBytes <= 300_000 && store.retainedBytes > 300_000 - 26_000, `${store.retainedBytes}`);
  assert.equal((await readAll(s, 0, 1 << 20)).at(-1)!.seq, 60, 'the newest output is kept');
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /has 586 KiB free, so this server spools at most 293 KiB \(half of it\) instead of 1024 MiB/);
  await store.dispose();
});

test('SpoolStore: with room to spare the configured cap stands', async () => {
  const store = new SpoolStore({ processBytes: 1 << 30, totalBytes: 1_000_000, freeBytes: () => 10_000_000 });
  store.create()!.append(1, 'stdout', bytes(1, 10));
  assert.equal(store.effectiveTotalBytes, 1_000_000);
  await store.dispose();
});
