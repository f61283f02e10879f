import * as assert from 'node:assert/strict';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, plain, startExecServer, waitFor, waitForText, withSettings } from './helpers';

/** A loopback TCP relay we can cut: the WebSocket between the extension and the executor runs through it. */
class CuttableRelay {
  private readonly sockets = new Set<Socket>();
  private refusing = false;
  readonly server: Server;
  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }
  listen(): Promise<number> {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as { port: number }).port)));
  }
  /** Drops every connection and refuses new ones until `restore()`. */
  cut(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
  }
  restore(): void {
    this.refusing = false;
  }
  close(): void {
    this.cut();
    this.server.close();
  }
}

/**
 * A suite's executor `name`: our server (with `serverArgs`) behind a relay the test can cut, set
 * as a workspace executor with `settings`; undone in the suite's teardown.
 */
function relayedExecutor(name: string, serverArgs: string[] = [], settings: Record<string, unknown> = {}): { relay: () => CuttableRelay } {
  let server: Awaited<ReturnType<typeof startExecServer>> | undefined;
  let relay: CuttableRelay | undefined;
  let restore: (() => Promise<void>) | undefined;
  suiteSetup(async () => {
    server = await startExecServer(serverArgs);
    relay = new CuttableRelay(server.port);
    const port = await relay.listen();
    restore = await withSettings({
      executors: [{ name, url: `ws://127.0.0.1:${port}` }],
      sandbox: 'full-access',
      sandboxNetwork: true,
      ...settings,
    });
    const api = await getApi();
    await waitFor(`the ${name} executor in the list`, () => api.executorNames().includes(name));
  });
  suiteTeardown(async () => {
    await restore?.();
    relay?.close();
    server?.stop();
  });
  return { relay: () => relay! };
}

suite('recovery (a remote executor behind a relay)', () => {
  const relayed = relayedExecutor('relayed');

  test('a dropped connection shows one "resuming" line and the output continues, complete and in order', async () => {
    const api = await getApi();
    assert.equal((await api.connect('relayed')).kind, 'connected');
    const before = new Set(api.terminals());
    await vscode.commands.executeCommand('execBridge.runCommand', 'for i in $(seq 1 30); do echo "tick $i"; sleep 0.05; done', 'relayed');
    const t = await waitFor('the terminal', () => api.terminals().find((x) => !before.has(x)));
    assert.equal(t.executor, 'relayed');
    await waitForText(t, /tick 3\r/);

    const states: string[] = [];
    const sub = api.onDidChangeExecutorState(({ executor, state }) => executor === 'relayed' && states.push(state.kind));
    try {
      relayed.relay().cut();
      await waitForText(t, /connection lost — resuming…/);
      // Output produced while disconnected is fetched after the resume.
      await new Promise((r) => setTimeout(r, 400));
      relayed.relay().restore();
      await t.done;
    } finally {
      sub.dispose();
    }
    assert.ok(states.includes('recovering') && states.at(-1) === 'connected', `states: ${states.join(' → ')}`);
    const text = plain(t.text());
    const ticks = [...text.matchAll(/^tick (\d+)\r$/gm)].map((m) => Number(m[1]));
    assert.deepEqual(
      ticks,
      Array.from({ length: 30 }, (_, i) => i + 1),
      'every line once, in order',
    );
    assert.equal(text.match(/connection lost — resuming…/g)?.length, 1, 'one line per outage');
    assert.equal(t.exitCode, 0);
    t.terminal.dispose();
  });
});

suite("recovery: an outage longer than the executor's default TTL", () => {
  // A client that asks for nothing gets 1 s here; the window asks for its own TTL.
  const napping = relayedExecutor('napping', ['--session-ttl-ms', '1000'], { sessionTtlSeconds: 600 });

  test('the window asks for its own session TTL: the command outlives the default, the state says until when, the output is complete', async () => {
    const api = await getApi();
    assert.equal((await api.connect('napping')).kind, 'connected');
    const gate = `/tmp/exec-bridge-nap-${process.pid}-${Date.now()}`;
    const before = new Set(api.terminals());
    await vscode.commands.executeCommand(
      'execBridge.runCommand',
      `i=0; while [ ! -e ${gate} ] && [ $i -lt 600 ]; do i=$((i+1)); echo "tick $i"; sleep 0.05; done; echo done`,
      'napping',
    );
    const t = await waitFor('the terminal', () => api.terminals().find((x) => !before.has(x)));
    await waitForText(t, /tick 3\r/);
    napping.relay().cut();
    const down = await waitFor('recovering', () => {
      const s = api.executorState('napping');
      return s.kind === 'recovering' ? s : undefined;
    });
    // What the status bar and the Executors view read: since when, and until when it keeps trying.
    assert.equal(down.until! - down.since, 600_000 + 60_000, JSON.stringify(down));
    // Three times the server's default TTL: a session that asked for nothing would be gone.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(api.executorState('napping').kind, 'recovering');
    napping.relay().restore();
    // Using the executor retries at once (no waiting out the back-off).
    assert.equal((await api.connect('napping')).kind !== 'failed', true);
    await waitFor('connected again', () => api.executorState('napping').kind === 'connected', 30_000);
    await vscode.workspace.fs.writeFile(vscode.Uri.file(gate), new Uint8Array());
    await t.done;
    const text = plain(t.text());
    const ticks = [...text.matchAll(/^tick (\d+)\r$/gm)].map((m) => Number(m[1]));
    assert.ok(ticks.length > 3, text.slice(-300));
    assert.deepEqual(
      ticks,
      Array.from({ length: ticks.length }, (_, i) => i + 1),
      'every line once, in order',
    );
    assert.match(text, /^done\r$/m);
    assert.equal(t.exitCode, 0);
    t.terminal.dispose();
  });
});
