import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readWhole } from '../../../src/server/fsRead';

const dir = mkdtempSync(join(tmpdir(), 'exec-bridge-readwhole-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 1024 * 1024;

/** readWhole of a file holding `bytes`, told the file has `statSize` bytes (a file that changed after its stat). */
async function readAs(bytes: Buffer, statSize: number): Promise<Buffer> {
  const path = join(dir, `f-${bytes.length}-${statSize}`);
  writeFileSync(path, bytes);
  const handle = await open(path, 'r');
  try {
    return (await readWhole(handle, statSize)).data;
  } finally {
    await handle.close();
  }
}

test('a large file is read whole, exactly: as stat said, grown after the stat, shrunk after it', async () => {
  const data = randomBytes(3 * MiB + 12345);
  assert.ok((await readAs(data, data.length)).equals(data), 'size as stat said');
  assert.ok((await readAs(data, 2 * MiB)).equals(data), 'the file grew past its stat size: the rest is read too');
  assert.ok((await readAs(data, 5 * MiB)).equals(data), 'the file shrank: what is there');
  const small = randomBytes(1000);
  assert.ok((await readAs(small, small.length)).equals(small), 'a small file, one read');
  assert.ok((await readAs(small, 0)).equals(small), 'size 0 (procfs-like): read until the end');
});

test('a large file of known size leaves the asked headroom in front of its bytes; a small or grown one has none', async () => {
  const read = async (bytes: Buffer, statSize: number) => {
    const path = join(dir, `h-${bytes.length}-${statSize}`);
    writeFileSync(path, bytes);
    const handle = await open(path, 'r');
    try {
      return await readWhole(handle, statSize, 64);
    } finally {
      await handle.close();
    }
  };
  const data = randomBytes(2 * MiB + 7);
  const large = await read(data, data.length);
  assert.ok(large.data.equals(data));
  assert.equal(large.headroom, 64);
  assert.ok(large.data.byteOffset >= 64, 'the room is in the same memory');
  const grown = await read(data, 2 * MiB);
  assert.ok(grown.data.equals(data), 'grown after the stat: every byte');
  assert.equal(grown.headroom, 0);
  const small = await read(randomBytes(100), 100);
  assert.equal(small.headroom, 0);
});
