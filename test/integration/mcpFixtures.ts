/** Shared bits of the MCP integration tests (not a test file itself). */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe } from 'node:test';
import { ExecServerClient, type ClientOptions } from '../../src/client';
import { mergeMcpConfig, parseSettingsServers, type McpConfig } from '../../src/mcp/config';
import type { McpExecClient, McpExecutor, McpExecutorHost } from '../../src/mcp/executorHost';
import type { McpServer } from '../../src/mcp/mcpServer';
import type { McpTimings } from '../../src/mcp/serverContext';
import { McpServerManager, type McpManagerOptions } from '../../src/mcp/serverManager';
import { WRAPPER_NAME } from '../../src/mcp/orphanReaper';
import type { McpServerState } from '../../src/mcp/serverState';
import { Emitter } from '../../src/util/emitter';
import { FaultProxy } from '../helpers/faultProxy';
import { descendantsOf, liveProcesses, procFile } from '../helpers/procs';
import { REPO_ROOT, startExecServer, type ExecServerProcess, type ServerKind } from '../helpers/servers';

const MCP = join(REPO_ROOT, 'node_modules', '@modelcontextprotocol');
export const SERVER_MEMORY = join(MCP, 'server-memory', 'dist', 'index.js');
export const SERVER_EVERYTHING = join(MCP, 'server-everything', 'dist', 'index.js');
export const SERVER_FILESYSTEM = join(MCP, 'server-filesystem', 'dist', 'index.js');
/** Compiled next to this file. */
export const FIXTURE_SERVER = join(__dirname, '..', 'helpers', 'mcpFixtureServer.js');
/** Dependency-free MCP server, for tests that start many. */
export const TINY_SERVER = join(__dirname, '..', 'helpers', 'mcpTinyServer.js');
export const NODE = process.execPath;

/**
 * A small real implementation of the executor seam (what the extension does with its connections):
 * executors by id, one of them active; `changed()` fires `onDidChange`.
 */
export class TestExecutorHost implements McpExecutorHost {
  private readonly executors = new Map<string, McpExecutor>();
  active: string | undefined;
  private readonly emitter = new Emitter<void>();
  readonly onDidChange = this.emitter.event;

  set(id: string, client: McpExecClient): void {
    this.executors.set(id, { id, label: id, client });
    this.active ??= id;
  }

  changed(): void {
    this.emitter.fire();
  }

  acquire(executor: string | undefined): Promise<McpExecutor> {
    const id = executor ?? this.active;
    const e = id === undefined ? undefined : this.executors.get(id);
    if (!e || e.client.state.kind === 'failed') return Promise.reject(new Error(`executor "${id ?? '(none)'}" is not connected`));
    return Promise.resolve(e);
  }

  resolveId(executor: string | undefined): string | undefined {
    return executor ?? this.active;
  }
}

export interface Executor {
  server: ExecServerProcess;
  client: ExecServerClient;
  proxy: FaultProxy | undefined;
  host: TestExecutorHost;
  /** Another client (own session) on the same server. */
  connect(options?: Partial<ClientOptions>, viaProxy?: boolean): Promise<ExecServerClient>;
  close(): Promise<void>;
}

export async function startExecutor(
  kind: ServerKind,
  options: { proxy?: boolean; client?: Partial<ClientOptions>; serverArgs?: string[] } = {},
): Promise<Executor> {
  const server = await startExecServer(kind, { args: options.serverArgs ?? [] });
  const clients: ExecServerClient[] = [];
  let proxy: FaultProxy | undefined;
  try {
    if (options.proxy) proxy = await FaultProxy.forUrl(server.url);
    const connect = async (extra: Partial<ClientOptions> = {}, viaProxy = true) => {
      const url = viaProxy && proxy ? proxy.url : server.url;
      const c = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url }, clientName: 'mcp-test', ...extra });
      clients.push(c);
      return c;
    };
    const client = await connect(options.client);
    const host = new TestExecutorHost();
    host.set('local', client);
    return {
      server,
      client,
      proxy,
      host,
      connect,
      close: async () => {
        for (const c of clients) c.dispose();
        await proxy?.close();
        await server.stop();
      },
    };
  } catch (e) {
    await proxy?.close();
    await server.stop();
    throw e;
  }
}

/**
 * One `describe` per exec-server (ours, then the real codex), each with its own executor started
 * before its tests and closed after them. `exec()` is that executor inside a test.
 */
export function describeOnExecutors(
  title: string,
  body: (exec: () => Executor) => void,
  options?: Parameters<typeof startExecutor>[1],
): void {
  for (const kind of ['ours', 'codex'] as ServerKind[]) {
    describe(`${title} on ${kind} exec-server`, () => {
      let executor: Executor | undefined;
      before(async () => {
        executor = await startExecutor(kind, options);
      });
      after(async () => {
        await executor?.close();
      });
      body(() => {
        if (!executor) throw new Error('the executor did not start');
        return executor;
      });
    });
  }
}

/** A configuration from a settings-style object of servers. */
export function configOf(servers: Record<string, object>): McpConfig {
  const config = mergeMcpConfig([parseSettingsServers(servers, { kind: 'settings', file: 'test settings' })]);
  const bad = config.diagnostics.filter((d) => d.severity === 'error');
  if (bad.length > 0) throw new Error(`test config invalid: ${JSON.stringify(bad)}`);
  return config;
}

/** Resolves when `pred(server.state)` holds (checked now and on every change); rejects after `timeoutMs` with the log tail. */
export function waitForState(
  server: McpServer,
  pred: (s: McpServerState) => boolean,
  timeoutMs = 20_000,
  what = 'state',
): Promise<McpServerState> {
  return new Promise((resolve, reject) => {
    if (pred(server.state)) return resolve(server.state);
    const timer = setTimeout(() => {
      sub.dispose();
      const tail = server.log
        .all()
        .slice(-15)
        .map((e) => `  ${e.kind}: ${e.text}`)
        .join('\n');
      reject(
        new Error(`timed out after ${timeoutMs} ms waiting for ${what} of "${server.name}"; now ${JSON.stringify(server.state)}\n${tail}`),
      );
    }, timeoutMs);
    const sub = server.onDidChange(() => {
      if (!pred(server.state)) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(server.state);
    });
    return undefined;
  });
}

/**
 * The executor's own short-lived helpers: our FIFO pool tops itself up with one `mkfifo` run in
 * the background at any time (at start-up, after process starts). They are not processes the
 * test started, so a tree count must not depend on whether one happens to be running.
 */
const EXECUTOR_HELPERS = new Set(['mkfifo']);

/** The server's watchdog (src/server/orphanGuard.ts): one per server, started with its first child. */
function isOrphanGuard(pid: number): boolean {
  return procFile(pid, 'cmdline').includes('\0exec-bridge-orphan-guard');
}

/** Live (non-zombie) descendants of `pid`, the executor's process tree, without its own transient helpers. */
export function descendants(pid: number): number[] {
  return descendantsOf(pid)
    .filter((c) => !c.zombie && !EXECUTOR_HELPERS.has(procFile(c.pid, 'comm').trim()) && !isOrphanGuard(c.pid))
    .map((c) => c.pid);
}

/**
 * Live processes whose environment carries `MCP_TEST_TAG=<tag>`. Unlike the tree, this also finds
 * a grandchild that was re-parented to init when its parent died — exactly the leak to catch.
 */
export function tagged(tag: string): number[] {
  const needle = `MCP_TEST_TAG=${tag}\0`;
  return liveProcesses()
    .filter((p) => procFile(p.pid, 'environ').includes(needle))
    .map((p) => p.pid);
}

/** Like `tagged`, without the reaper wrappers (`/bin/sh -c … exec-bridge-mcp …`): the servers and their helpers. */
export function taggedServers(tag: string): number[] {
  return tagged(tag).filter((pid) => {
    const argv = procFile(pid, 'cmdline');
    return argv !== '' && !argv.includes(`\0${WRAPPER_NAME}\0`);
  });
}

let tagCounter = 0;
/** A unique tag for one test's processes. */
export function newTag(): string {
  return `t${process.pid}-${++tagCounter}-${Date.now().toString(36)}`;
}

/** Short timings so failure paths run in test time. */
export const TIMINGS: Partial<McpTimings> = {
  graceMs: 300,
  closeConfirmMs: 3000,
  restartDelaysMs: [100, 200, 400],
  listChangedDebounceMs: 50,
};

/**
 * A manager on `host` as the MCP suites build it: the test timings (`options.timings` over
 * TIMINGS) and the test client's name; the other options (client features, trace, inputs,
 * sign-in, saveSandbox) as given.
 */
export function manager(host: McpExecutorHost, options: Omit<McpManagerOptions, 'host'> = {}): McpServerManager {
  return new McpServerManager({
    clientInfo: { name: 'exec-bridge-test', version: '0.0.0' },
    ...options,
    host,
    timings: { ...TIMINGS, ...options.timings },
  });
}

/** An HTTP server on 127.0.0.1 that answers every request with `body` (a destination for sandboxed servers to fetch). */
export async function listenText(body: string): Promise<{ server: HttpServer; port: number }> {
  const server = createHttpServer((_q, r) => r.end(`${body}\n`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** The text parts of a tool result, joined. */
export function text(result: { content?: unknown }): string {
  return ((result.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? '').join('');
}
