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
    return await readWhole(handle, statSize);
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
