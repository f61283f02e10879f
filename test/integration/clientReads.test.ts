/**
 * The client reads its ws:// and ws+unix: sockets into large slabs (src/client/connectors.ts):
 * output frames that lie within one read reach the handle as views, not copies. Every view a
 * consumer keeps must stay exact to the end (a slab is never written twice).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ExecServerClient } from '../../src/client';
import { startExecServer, type ExecServerProcess } from '../helpers/servers';

const dir = mkdtempSync(join(tmpdir(), 'client-reads-'));
const DATA = randomBytes(16 * 1024 * 1024);
const FILE = join(dir, 'data');
writeFileSync(FILE, DATA);
let server: ExecServerProcess;
/** The same server code on a Unix socket (the form of the extension's local daemon and of SSH's forwarded socket). */
let unixServer: ExecServerProcess;
before(async () => {
  chmodSync(dir, 0o700);
  [server, unixServer] = await Promise.all([startExecServer('ours'), startExecServer('ours', { listen: `unix:${join(dir, 's')}` })]);
});
after(async () => {
  await Promise.all([server?.stop(), unixServer?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

for (const transport of ['ws://', 'ws+unix:'] as const)
  test(`binary output through ExecServerClient over ${transport}: kept chunks stay exact, and most are views of large reads`, async () => {
    const url = transport === 'ws://' ? server.url : unixServer.url;
    assert.ok(url.startsWith(transport), url);
    const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url }, clientName: 't', binaryOutput: true });
    try {
      const proc = await client.startProcess({ argv: ['cat', FILE], cwd: dir, tty: false });
      const kept: Buffer[] = [];
      proc.onEvent((e) => {
        if (e.type === 'output') kept.push(e.data); // no copy: the views must stay valid
      });
      await proc.completion;
      assert.ok(Buffer.concat(kept).equals(DATA), 'every kept chunk exact at the end');
      const views = kept.filter((b) => b.buffer.byteLength >= 512 * 1024).length;
      assert.ok(views > kept.length / 2, `${views} of ${kept.length} chunks are views of a read slab (not copied out of two reads)`);
    } finally {
      client.dispose();
    }
  });
