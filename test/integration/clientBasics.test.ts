/** The client's typed calls against real servers (ours and `codex exec-server`), and its failure modes. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ExecServerClient,
  isExecClientError,
  websocketConnector,
  type Connector,
  type ExecClientError,
  type RemoteError,
} from '../../src/client';
import { ObservedConnection } from '../helpers/observedConnection';
import { CLI_JS, CODEX_BIN, startExecServer, type ExecServerProcess } from '../helpers/servers';
import { gather } from './clientHelpers';

async function rejection(p: Promise<unknown>): Promise<ExecClientError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isExecClientError(e), `expected an ExecClientError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a rejection');
}

/** A real connection, observed: counts requests sent whose answer has not come back yet. */
class CountingConnection extends ObservedConnection {
  private readonly open = new Set<number | string>();
  peak = 0;
  protected received(text: string): void {
    const m = JSON.parse(text) as { id?: number | string; method?: string };
    if (m.id !== undefined && m.method === undefined) this.open.delete(m.id);
  }
  protected sent(text: string): void {
    const m = JSON.parse(text) as { id?: number | string; method?: string };
    if (m.id !== undefined && m.method !== undefined) {
      this.open.add(m.id);
      this.peak = Math.max(this.peak, this.open.size);
    }
  }
}

for (const kind of ['ours', 'codex'] as const) {
  describe(`client against ${kind}`, () => {
    let server: ExecServerProcess;
    let client: ExecServerClient;
    let counting: CountingConnection | undefined;
    let dir: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'exec-bridge-client-'));
      server = await startExecServer(kind, { token: true });
      const ws = websocketConnector(server.url, server.token);
      const connector: Connector = async (signal) => (counting = new CountingConnection(await ws(signal)));
      client = await ExecServerClient.connect({ connector, clientName: 'client-test' });
    });
    after(async () => {
      client?.dispose();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('runs a command; output, exit code and completion come from pushed events', async () => {
      const h = await client.startProcess({ argv: ['bash', '-c', 'echo hi; echo err >&2; exit 3'], cwd: dir });
      const streams: string[] = [];
      h.onEvent((e) => {
        if (e.type === 'output') streams.push(`${e.stream}:${e.data.toString()}`);
      });
      assert.deepEqual(await h.completion, { exitCode: 3, sandboxDenied: false });
      assert.deepEqual(streams.sort(), ['stderr:err\n', 'stdout:hi\n']);
      assert.equal(h.status, 'closed');
    });

    test('cwd is a plain path; explicit env is the complete environment', async () => {
      const h = await client.startProcess({ argv: ['/bin/sh', '-c', 'pwd; echo "[$FOO][$HOME]"'], cwd: dir, env: { FOO: 'bar' } });
      const out = gather(h);
      await h.completion;
      assert.equal(out.text(), `${dir}\n[bar][]\n`);
    });

    test('a TTY process gets a PTY', async () => {
      const h = await client.startProcess({ argv: ['bash', '-c', 'test -t 0 && echo tty'], cwd: dir, tty: true });
      const out = gather(h);
      assert.equal((await h.completion).exitCode, 0);
      assert.equal(out.text(), 'tty\r\n');
    });

    test('a spawn failure is an rpc error with the server data', async () => {
      const err = (await rejection(client.startProcess({ argv: ['no-such-binary-xyz'], cwd: dir }))) as RemoteError;
      assert.equal(err.kind, 'rpc');
      assert.equal(err.code, -32603);
      assert.deepEqual(err.data, { kind: 'spawnNotFound' });
    });

    test('writing to a process without stdin is writeRejected', async () => {
      const h = await client.startProcess({ argv: ['sleep', '5'], cwd: dir });
      const err = await rejection(h.write('x'));
      assert.equal(err.kind, 'writeRejected');
      assert.equal(await h.terminate(), true);
      assert.equal((await h.completion).exitCode, 137);
    });

    test('fs calls take and return plain paths', async () => {
      const f = join(dir, 'a', 'f.txt');
      await client.createDirectory(join(dir, 'a'));
      await client.writeFile(f, 'hello fs\n');
      assert.equal((await client.readFile(f)).toString(), 'hello fs\n');
      const meta = await client.getMetadata(f);
      assert.equal(meta.isFile, true);
      assert.equal(meta.size, 9);
      await client.copy(join(dir, 'a'), join(dir, 'b'), { recursive: true });
      assert.deepEqual(
        (await client.readDirectory(join(dir, 'b'))).map((e) => e.fileName),
        ['f.txt'],
      );
      assert.equal(await client.canonicalize(join(dir, 'a', '..', 'b', 'f.txt')), join(dir, 'b', 'f.txt'));
      await client.remove(join(dir, 'b'));
      const missing = (await rejection(client.readFile(join(dir, 'b', 'f.txt')))) as RemoteError;
      assert.equal(missing.code, -32004);
    });

    test('environment info and status', async () => {
      assert.equal(client.environmentInfo?.shell.name !== undefined, true);
      assert.deepEqual(await client.getEnvironmentStatus(), { status: 'ready' });
      const info = await client.getEnvironmentInfo();
      assert.equal(typeof info.shell.path, 'string');
      if (kind === 'ours') assert.equal(client.capabilities.concurrentRequests, true);
    });

    test('500 concurrent calls: never more than 64 (+1 cleanup) on the wire, all answered', async () => {
      const calls = Array.from({ length: 500 }, (_, i) => (i % 2 ? client.getEnvironmentStatus() : client.getEnvironmentInfo()));
      const results = await Promise.all(calls);
      assert.equal(results.length, 500);
      assert.ok(counting, 'connector used');
      assert.ok(counting.peak <= 65, `peak ${counting.peak}`);
      assert.ok(counting.peak >= 32, `the window was used: peak ${counting.peak}`);
      assert.ok(client.inFlight.peak <= 65);
      assert.equal(client.inFlight.now, 0);
    });
  });

  test(`${kind}: killing the server past the deadline ends in failed, with one clear error and no hang`, async () => {
    const server = await startExecServer(kind);
    const client = await ExecServerClient.connect({
      endpoint: { kind: 'websocket', url: server.url },
      deadlineMs: 1_500,
      attemptTimeoutMs: 500,
      keepalive: { intervalMs: 200, timeoutMs: 400 },
    });
    try {
      const h = await client.startProcess({ argv: ['sleep', '30'], cwd: '/tmp' });
      const failedEvent = new Promise<void>((resolve) => h.onEvent((e) => e.type === 'failed' && resolve()));
      const t0 = Date.now();
      await server.stop();
      // A call made during recovery waits, then gets the same error.
      const waiting = rejection(client.getEnvironmentStatus());
      const completion = rejection(h.completion);
      const err = await completion;
      const elapsed = Date.now() - t0;
      assert.equal(err.kind, 'disconnected');
      assert.match(err.message, /could not resume within 2 s/);
      assert.equal(await waiting, err);
      await failedEvent;
      assert.equal(client.state.kind, 'failed');
      assert.equal(await rejection(client.readFile('/etc/hostname')), err);
      // Well before the process (sleep 30) could end: recovery gave up, nothing waited for the process.
      assert.ok(elapsed < 20_000, `failed after ${elapsed} ms`);
    } finally {
      client.dispose();
      await server.stop();
    }
  });

  test(`${kind}: connects over stdio to a spawned server`, async () => {
    const endpoint =
      kind === 'ours'
        ? { kind: 'stdio' as const, command: process.execPath, args: [CLI_JS, 'serve', '--listen', 'stdio'] }
        : { kind: 'stdio' as const, command: CODEX_BIN, args: ['exec-server', '--listen', 'stdio'] };
    const client = await ExecServerClient.connect({ endpoint });
    try {
      const h = await client.startProcess({ argv: ['echo', 'over stdio'], cwd: '/tmp' });
      const out = gather(h);
      await h.completion;
      assert.equal(out.text(), 'over stdio\n');
    } finally {
      client.dispose();
    }
  });
}
