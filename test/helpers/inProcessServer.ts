/**
 * Our real exec-server in the test's own process, for the integration tests of the layers above the
 * wire (terminal runs, agent tools, executor connections): clients reach it over memory transports
 * or loopback, and the processes it starts are real.
 */
import assert from 'node:assert/strict';
import { ExecServerClient, type ClientOptions, type Connector } from '../../src/client';
import { ExecServer, type ExecServerOptions } from '../../src/server/execServer';
import { passthroughPlan, type SpawnPlanner, type SpawnRequest } from '../../src/server/spawnPlan';
import { MemoryTransport } from './memoryTransport';

/** Each connect is a new memory pair served by `server`; the client ends go to `links` (to cut them). */
export function inProcessConnector(server: ExecServer, links?: MemoryTransport[]): Connector {
  return async () => {
    const [near, far] = MemoryTransport.pair();
    server.serve(far);
    links?.push(near);
    return near;
  };
}

/** A client of `server` over memory transports, without keepalive; `options` add to or override that. */
export function connectInProcess(server: ExecServer, options: Partial<ClientOptions> = {}): Promise<ExecServerClient> {
  return ExecServerClient.connect({ connector: inProcessConnector(server), keepalive: false, ...options });
}

/** Fails when run in `fakeSandbox`'s stand-in sandbox, succeeds without it. */
export const FAKE_SANDBOX_SCRIPT = 'if [ -n "$IN_FAKE_SANDBOX" ]; then echo "blocked here" >&2; exit 13; fi; echo "ran unsandboxed"';

/**
 * A sandbox stand-in for the server's planner seam: a sandboxed start gets `IN_FAKE_SANDBOX=1` and
 * any failure of it is a denial. Every request it sees is kept in `requests`.
 */
export function fakeSandbox(requests: SpawnRequest[]): SpawnPlanner {
  return async (req) => {
    requests.push(req);
    const plan = passthroughPlan(req);
    if (req.sandbox === null) return plan;
    return { ...plan, env: { ...plan.env, IN_FAKE_SANDBOX: '1' }, restricted: true, isDenial: () => true };
  };
}

/**
 * `new ExecServer(options)` listening on loopback, with one process run to its end first: that start
 * waits for the server's FIFO pool to be made, so no `mkfifo` is running when the test closes it
 * (FifoPool.dispose can fail with ENOTEMPTY while one is).
 */
export async function listeningServer(options: ExecServerOptions & { token: string }): Promise<{ server: ExecServer; url: string }> {
  const server = new ExecServer(options);
  const url = await server.listen('127.0.0.1', 0);
  const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url, token: options.token }, keepalive: false });
  try {
    assert.equal((await (await client.startProcess({ argv: ['/bin/true'], cwd: '/' })).completion).exitCode, 0);
  } finally {
    client.dispose();
  }
  return { server, url };
}
