/**
 * The managed network on the prewarm path (src/server/prewarm.ts): after a managed-network start,
 * our default server builds the next sandbox like it ahead of time, with a proxy of its own (its
 * own folder in the private directory, marked `prewarmed` while it waits). A start with the same
 * lists runs in it and takes its proxy over, so a refusal is still named for that start; a start
 * with other lists never uses it; an unused one's proxy is gone once the server stops, or once it
 * expired unused while the server runs on. Our `serve
 * --verbose` (its log says which sandbox a start ran in) with its own private directory. Loopback only.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { PREWARMED_MARKER } from '../../src/server/sandbox/managedNet';
import { RawClient, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'exec-bridge-netwarm-')));
const ws = join(base, 'ws');
const runtime = join(base, 'runtime');
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root' };

/** The managed network's socket folders in the server's private directory, and whether each waits for a start. */
function netDirs(dirOf = runtime): Array<{ name: string; waiting: boolean; socket: boolean }> {
  const dir = join(dirOf, 'sandbox');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => /^net-\d+-/.test(n))
    .map((name) => {
      const files = readdirSync(join(dir, name));
      return { name, waiting: files.includes(PREWARMED_MARKER), socket: files.includes('proxy.sock') };
    });
}

/** Polls `cond` (bounded: 200 checks, `ms` in all). */
async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (let i = 0; i < 200 && !cond(); i++) {
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, ms / 200));
  }
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

describe(
  'managed network: sandboxes built ahead of time',
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    let allowed: Server;
    const denied: Server[] = [];
    let allowedPort = 0;
    const deniedPorts: number[] = [];
    let server: StartedServer;
    let client: RawClient;
    let n = 0;

    before(async () => {
      mkdirSync(ws, { recursive: true });
      mkdirSync(runtime, { mode: 0o700 });
      const listen = async (s: Server) => {
        await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
        return (s.address() as AddressInfo).port;
      };
      allowed = createServer((_q, r) => r.end('allowed-body\n'));
      allowedPort = await listen(allowed);
      for (let i = 0; i < 2; i++) {
        const s = createServer((_q, r) => r.end('denied-body\n'));
        denied.push(s);
        deniedPorts.push(await listen(s));
      }
      server = await startServer('ours', ['--verbose'], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtime });
      client = (await RawClient.session(server.url)).client;
    });

    after(async () => {
      client?.close();
      await server?.stop();
      allowed?.close();
      for (const s of denied) s.close();
      rmSync(base, { recursive: true, force: true });
    });

    /** Runs `script` under the managed network with `allow`; its exit params and stdout. */
    const run = async (script: string, allow: string[]) => {
      const processId = `w${++n}`;
      const r = await client.call('process/start', {
        processId,
        argv: ['/bin/sh', '-c', script],
        cwd: pathToFileURL(ws).href,
        env: ENV,
        tty: false,
        arg0: null,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        enforceManagedNetwork: true,
        managedNetwork: { allow },
      });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const exited = (await client.processEvents(processId)).find((m) => m.method === 'process/exited')!.params;
      return { exited, stdout: client.output(processId, 'stdout') };
    };

    /** The pid of the sandbox the server built most recently (its --verbose log). */
    const lastBuilt = (): number | undefined => {
      const all = [...server.stderr().matchAll(/built one for the next start like this \(pid (\d+)\)/g)];
      return all.length ? Number(all.at(-1)![1]) : undefined;
    };
    const ranWarm = (pid: number) => server.stderr().includes(`running in the waiting sandbox (pid ${pid})`);
    /** What the server said became of waiting sandbox `pid` (taken, passed over and why, ended, torn down); undefined while it said nothing. */
    const fateOf = (pid: number): string | undefined =>
      new RegExp(
        `running in the waiting sandbox \\(pid ${pid}\\)|the waiting sandbox \\(pid ${pid}\\)[^\\n]*|torn down \\(pid ${pid}\\)`,
      ).exec(server.stderr())?.[0];
    /** Waits for a sandbox built and not yet used (its log line and its marked proxy folder); its pid. */
    const nextWaiting = async (what: string): Promise<number> => {
      const fresh = () => {
        const p = lastBuilt();
        return p !== undefined && !ranWarm(p) && netDirs().some((d) => d.waiting && d.socket);
      };
      await until(fresh, 10_000, what);
      return lastBuilt()!;
    };

    test('a start with the same lists runs in the waiting sandbox and its refusal is named for it', async (t) => {
      const lists = [`127.0.0.1:${allowedPort}`];
      const first = await run(`curl -sS -f http://127.0.0.1:${allowedPort}/`, lists);
      assert.equal(first.exited.exitCode, 0, JSON.stringify(first.exited));
      // Another test's server that starts meanwhile (its private directory is new) rightly makes the
      // waiting sandbox unusable ("does not cover"), and a sandbox bwrap could not finish building
      // ends before use (its reason logged, and reported here): then the next one built is taken
      // (bounded). Which of these happened is the server's log line, waited for.
      let w = 0;
      let waitingDir = '';
      let second: Awaited<ReturnType<typeof run>> | undefined;
      for (let attempt = 1; attempt <= 5; attempt++) {
        w = await nextWaiting('a waiting sandbox with its proxy');
        waitingDir = netDirs().find((d) => d.waiting)!.name;
        // Inside, only its own folder is there, and no longer marked as waiting.
        second = await run(
          `ls -A /dev/exec-bridge-net && curl -sS -f http://127.0.0.1:${allowedPort}/ && curl -sS -f http://127.0.0.1:${deniedPorts[0]}/`,
          lists,
        );
        await until(() => fateOf(w) !== undefined, 10_000, `what became of the waiting sandbox (pid ${w})`).catch((e: Error) =>
          assert.fail(`${e.message}:\n${server.stderr().slice(-2000)}`),
        );
        const fate = fateOf(w)!;
        if (/ended before use/.test(fate)) t.diagnostic(fate);
        if (!/does not cover|ended before use/.test(fate)) break;
      }
      assert.ok(second);
      assert.ok(ranWarm(w), `the start did not run in the waiting sandbox (pid ${w}):\n${server.stderr().slice(-2000)}`);
      assert.equal(second.stdout, 'proxy.sock\nallowed-body\n', "the waiting sandbox's proxy did not serve the start that took it");
      assert.equal(second.exited.sandboxDenied, true, JSON.stringify(second.exited));
      assert.equal(second.exited.sandboxDeniedTarget, `127.0.0.1:${deniedPorts[0]}`);
      // It was that start's: closed with it.
      await until(() => !netDirs().some((d) => d.name === waitingDir), 5000, 'the taken proxy closed with its process');
    });

    test('a start with other lists does not use it, and its refusal is its own', async () => {
      const w = await nextWaiting('a waiting sandbox (built after the last start)');
      const other = await run(`curl -sS -f http://127.0.0.1:${deniedPorts[1]}/`, [`127.0.0.1:${deniedPorts[0]}`]);
      assert.equal(ranWarm(w), false, 'a sandbox built for other lists was used');
      assert.equal(other.exited.sandboxDenied, true, JSON.stringify(other.exited));
      assert.equal(other.exited.sandboxDeniedTarget, `127.0.0.1:${deniedPorts[1]}`);
    });

    test("a stopped server leaves no waiting sandbox's proxy behind", async () => {
      await nextWaiting('a waiting sandbox with its proxy');
      await server.stop();
      assert.deepEqual(netDirs(), [], 'a stopped server left a proxy behind');
    });

    test('a waiting sandbox that expires unused takes its proxy with it (the server runs on)', async () => {
      const idleRuntime = join(base, 'idle-runtime');
      mkdirSync(idleRuntime, { mode: 0o700 });
      const short = await startServer('ours', ['--verbose', '--sandbox-prewarm-ms', '400'], {
        ...process.env,
        EXEC_BRIDGE_RUNTIME_DIR: idleRuntime,
      });
      try {
        const c = (await RawClient.session(short.url)).client;
        const r = await c.call('process/start', {
          processId: 'idle',
          argv: ['/bin/true'],
          cwd: pathToFileURL(ws).href,
          env: ENV,
          tty: false,
          arg0: null,
          sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
          enforceManagedNetwork: true,
          managedNetwork: { allow: ['example.com'] },
        });
        assert.equal(r.error, undefined, JSON.stringify(r.error));
        await c.processEvents('idle');
        await until(() => netDirs(idleRuntime).some((d) => d.waiting && d.socket), 10_000, 'a waiting sandbox with its proxy');
        await until(() => short.stderr().includes('unused for 400 ms, torn down'), 10_000, 'the waiting sandbox to expire');
        await until(() => netDirs(idleRuntime).length === 0, 5000, 'its proxy to close').catch(() =>
          assert.fail(`an expired sandbox left its proxy behind: ${JSON.stringify(netDirs(idleRuntime))}`),
        );
        c.close();
      } finally {
        await short.stop();
      }
    });
  },
);
