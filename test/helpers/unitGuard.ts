/**
 * Preloaded into every unit test file (`node --import <out>/test/helpers/unitGuard.js --test …`,
 * scripts/test.mjs): a unit test starts no process, no server and no worker (docs/style.md §15).
 * Each way to start one throws instead, so a test that does fails at once with the rule's text,
 * not later as a slow or flaky unit run. Connecting to a socket stays allowed (there is nothing to
 * connect to unless something started a server).
 *
 * It acts only inside a test file's own process (`NODE_TEST_CONTEXT`, set by the test runner for
 * the files it starts): the runner itself, which gets the same `--import`, must still spawn them.
 */
import type * as Dgram from 'node:dgram';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import type * as Net from 'node:net';

export const UNIT_GUARD_MESSAGE = 'unit tests start no process or server: move this test to test/integration (docs/style.md)';

function refuse(what: string): never {
  throw new Error(`${UNIT_GUARD_MESSAGE} (${what})`);
}

/** Replaces `obj[name]` (a function) with one that refuses, naming `what`. */
function block(obj: object, name: string, what: string): void {
  Object.defineProperty(obj, name, {
    configurable: true,
    enumerable: true,
    writable: true,
    value: function refused(): never {
      refuse(what);
    },
  });
}

export function installUnitGuard(): void {
  // The modules' own export objects, which every later `require` and `import` shares (an
  // `import * as` namespace in the compiled CommonJS is a copy of them).
  const require = createRequire(__filename);
  const childProcess = require('node:child_process') as object;
  const net = require('node:net') as typeof Net;
  const dgram = require('node:dgram') as typeof Dgram;
  const workerThreads = require('node:worker_threads') as object;
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
    block(childProcess, name, `child_process.${name}`);
  }
  block(net.Server.prototype, 'listen', 'net.Server.listen (also http/https servers and ws)');
  block(dgram.Socket.prototype, 'bind', 'dgram.Socket.bind');
  block(workerThreads, 'Worker', 'worker_threads.Worker');
  // ES modules that import these builtins by name see the replacements too.
  syncBuiltinESMExports();
  // node-pty is a package: patched on its export object, which every later require shares. Loading
  // it starts nothing (its native binding only).
  let pty: Record<string, unknown> | undefined;
  try {
    pty = require('node-pty') as Record<string, unknown>;
  } catch {
    pty = undefined; // not built on this machine: nothing can spawn through it anyway
  }
  if (pty !== undefined) for (const name of ['spawn', 'fork', 'createTerminal']) block(pty, name, `node-pty ${name}`);
}

if (process.env.NODE_TEST_CONTEXT !== undefined) installUnitGuard();
