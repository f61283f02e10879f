/**
 * Whole-file answers larger than a request frame: over stdio (the SSH and launcher transports) the
 * client accepts what it accepts over WebSocket, and an answer past the client's limit fails the
 * call that may have caused it, clearly and at once, instead of being asked again on every
 * reconnect (it used to loop until the recovery deadline).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AnswerTooLargeError, ExecServerClient } from '../../src/client';
import { CLI_JS, CODEX_BIN, startExecServer } from '../helpers/servers';

const dir = mkdtempSync(join(tmpdir(), 'large-answers-'));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const kind of ['ours', 'codex'] as const) {
  test(`${kind} over stdio: fs/readFile of a 40 MiB file (a 53 MiB base64 line) arrives exact`, async () => {
    const data = randomBytes(40 * 1024 * 1024);
    const file = join(dir, `big-${kind}`);
    writeFileSync(file, data);
    const endpoint =
      kind === 'ours'
        ? { kind: 'stdio' as const, command: process.execPath, args: [CLI_JS, 'serve', '--listen', 'stdio'] }
        : { kind: 'stdio' as const, command: CODEX_BIN, args: ['exec-server', '--listen', 'stdio'] };
    const client = await ExecServerClient.connect({ endpoint, clientName: 't', deadlineMs: 5_000 });
    try {
      const got = await client.readFile(file);
      assert.equal(got.length, data.length);
      assert.ok(got.equals(data), 'the bytes are exact');
      assert.equal(client.state.kind, 'connected', 'no reconnect was needed');
    } finally {
      client.dispose();
    }
  });
}

test('an answer over the client limit fails that read at once; the session and other calls go on', async () => {
  const server = await startExecServer('ours');
  const file = join(dir, 'over-limit');
  writeFileSync(file, randomBytes(3 * 1024 * 1024));
  const small = join(dir, 'small');
  writeFileSync(small, 'still here\n');
  const client = await ExecServerClient.connect({
    endpoint: { kind: 'websocket', url: server.url },
    maxAnswerBytes: 1024 * 1024,
    clientName: 't',
    deadlineMs: 10_000,
  });
  try {
    const proc = await client.startProcess({ argv: ['sh', '-c', 'read x; echo "got $x"'], cwd: dir, tty: false, pipeStdin: true });
    const started = Date.now();
    await assert.rejects(client.readFile(file), (e: unknown) => {
      assert.ok(e instanceof AnswerTooLargeError, `an AnswerTooLargeError, got ${String(e)}`);
      assert.match(e.message, /fs\/readFile/);
      assert.match(e.message, /1 MiB/);
      assert.match(e.message, /in blocks/);
      return true;
    });
    assert.ok(Date.now() - started < 8_000, 'failed well before the recovery deadline (not retried)');
    // The connection came back; the process started before it is still ours.
    assert.equal((await client.readFile(small)).toString(), 'still here\n');
    const out: Buffer[] = [];
    proc.onEvent((e) => {
      if (e.type === 'output') out.push(e.data);
    });
    await proc.write('after\n');
    const done = await proc.completion;
    assert.equal(done.exitCode, 0);
    assert.match(Buffer.concat(out).toString(), /got after/);
  } finally {
    client.dispose();
    await server.stop();
  }
});
