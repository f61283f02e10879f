/**
 * Denial → "Allow HOST for this workspace" → retry, with everything real: our exec-server with the
 * real sandbox planner (bubblewrap, the proxy, the bridge) over a memory transport, our client, the
 * approval policy and TerminalRun. Two HTTP servers on 127.0.0.1; the command fetches from the one
 * that is not on the list. Loopback only.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient } from '../../src/client';
import { ApprovalPolicy, MemoryAlwaysAllowStore, type ApprovalAnswer, type DeniedRun } from '../../src/core/approvalPolicy';
import { readSandboxSettings, sandboxLabel, sandboxRequest, withManagedNetwork } from '../../src/core/sandboxSettings';
import { TerminalRun, type RunSpec } from '../../src/core/terminalRun';
import { ExecServer } from '../../src/server/execServer';
import { SandboxPlanner } from '../../src/server/sandbox';
import { MemoryTransport } from '../helpers/memoryTransport';

const ws = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-netapprove-')));

describe(
  'managed network: denial → Allow host → retry',
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    const planner = new SandboxPlanner();
    let server: ExecServer;
    let allowed: Server;
    let other: Server;
    let allowedPort = 0;
    let otherPort = 0;

    before(async () => {
      server = new ExecServer({ planner: (req) => planner.plan(req), sandboxPrewarmMs: 0 });
      const listen = async (s: Server) => {
        await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
        return (s.address() as AddressInfo).port;
      };
      allowed = createServer((_q, r) => r.end('allowed-body\n'));
      other = createServer((_q, r) => r.end('other-body\n'));
      allowedPort = await listen(allowed);
      otherPort = await listen(other);
    });
    after(async () => {
      await server.close();
      planner.close();
      allowed.close();
      other.close();
      rmSync(ws, { recursive: true, force: true });
    });

    async function runWith(answers: Array<ApprovalAnswer | undefined>) {
      const client = await ExecServerClient.connect({
        connector: async () => {
          const [near, far] = MemoryTransport.pair();
          server.serve(far);
          return near;
        },
        keepalive: false,
      });
      const asked: DeniedRun[] = [];
      const allowedHosts: string[] = [];
      const policy = new ApprovalPolicy({
        mode: () => 'ask',
        store: new MemoryAlwaysAllowStore(),
        ask: (run) => {
          asked.push(run);
          return Promise.resolve(answers.shift());
        },
        allowHost: async (host) => void allowedHosts.push(host),
      });
      const settings = readSandboxSettings('workspace-write', false, [`127.0.0.1:${allowedPort}`]);
      const spec: RunSpec = {
        kind: 'command',
        executor: 'local',
        commandLine: 'fetch it',
        argv: ['curl', '-sS', '-f', '--max-time', '10', `http://127.0.0.1:${otherPort}/`],
        cwd: ws,
        env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
        tty: false,
        pipeStdin: false,
        sandbox: sandboxRequest(settings, ws),
        sandboxLabel: sandboxLabel(settings),
        ...withManagedNetwork(settings),
      };
      const run = new TerminalRun(spec, {
        start: (options) => client.startProcess(options),
        approve: (denial, signal) => policy.approve(denial, signal),
        beforeRun: (planned, signal, onAsk) => policy.beforeRun(planned, signal, onAsk),
        onConnectionState: client.onDidChangeState,
        canResize: () => false,
      });
      let raw = '';
      run.model.onWrite((t) => (raw += t));
      run.model.open({ cols: 200, rows: 24 });
      run.start();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        run.done,
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`never ended: ${raw}`)), 30_000))),
      ]);
      clearTimeout(timer);
      const text = raw.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r\n/g, '\n');
      run.dispose();
      client.dispose();
      return { asked, allowedHosts, text, exitCode: run.model.exitCode, spec };
    }

    test('the denial names the host; Allow host re-runs in the sandbox with it on the list and succeeds', async () => {
      const r = await runWith(['allowHost']);
      assert.equal(r.asked.length, 1);
      assert.equal(r.asked[0]!.deniedHost, '127.0.0.1');
      assert.match(r.asked[0]!.sandboxLabel, new RegExp(`network only 127\\.0\\.0\\.1:${allowedPort}`));
      assert.deepEqual(r.allowedHosts, ['127.0.0.1']);
      assert.match(r.text, /allowed 127\.0\.0\.1 for this workspace/);
      assert.match(r.text, /re-running in the sandbox with 127\.0\.0\.1 allowed/);
      assert.doesNotMatch(r.text, /WITHOUT the sandbox/);
      assert.match(r.text, /other-body/);
      assert.equal(r.exitCode, 0);
    });

    test('Deny: nothing is added and the command is not re-run', async () => {
      const r = await runWith(['deny']);
      assert.equal(r.asked.length, 1);
      assert.deepEqual(r.allowedHosts, []);
      assert.doesNotMatch(r.text, /other-body/);
      assert.notEqual(r.exitCode, 0);
    });
  },
);
