/**
 * One `ExecutorConnection` under test with everything it said (states, its client's states, log
 * lines, token asks), for the unit and integration tests of core/executorConnection.ts.
 */
import assert from 'node:assert/strict';
import type { ConnectionState } from '../../src/client';
import type { ExecutorConfig } from '../../src/core/executorConfig';
import { ExecutorConnection, type ExecutorConnectionDeps, type ExecutorState } from '../../src/core/executorConnection';

/** What `getToken` answers unless the test passes `token`. */
export const TOKEN = 'secret-token-0123456789';

export function observe(config: ExecutorConfig, deps: Partial<ExecutorConnectionDeps> & { token?: () => string | undefined } = {}) {
  const states: ExecutorState[] = [];
  const clientStates: ConnectionState[] = [];
  const logs: string[] = [];
  const tokenAsks: string[] = [];
  const conn = new ExecutorConnection(config, {
    getToken: async (name) => {
      tokenAsks.push(name);
      return deps.token ? deps.token() : TOKEN;
    },
    clientOptions: { keepalive: false, backoff: { stepMs: 5, maxMs: 20 } },
    log: (line) => logs.push(line),
    ...deps,
  });
  conn.onDidChangeState((s) => states.push(s));
  conn.onClientState((s) => clientStates.push(s));
  const kinds = () => states.map((s) => s.kind);
  return { conn, states, clientStates, logs, tokenAsks, kinds };
}

/** The error `p` rejects with (an Error); fails the test when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => {
      assert.ok(e instanceof Error);
      return e;
    },
  );
}
