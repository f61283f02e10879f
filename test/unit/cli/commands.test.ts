/**
 * The dispatcher's table (src/cli/commands.ts) against the bundles' sources: each command is
 * exported by the bundle the table names, and no bundle exports a command the table sends
 * elsewhere. The usage texts, which import nothing, agree with the values they quote.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commands as askpass } from '../../../src/cli/bundles/askpass';
import { commands as mcp } from '../../../src/cli/bundles/mcp';
import { commands as mcpProxy } from '../../../src/cli/bundles/mcpProxy';
import { commands as run } from '../../../src/cli/bundles/run';
import { commands as server } from '../../../src/cli/bundles/server';
import { COMMAND_BUNDLES, type BundleName, type CommandName } from '../../../src/cli/commands';
import { CONNECT_USAGE } from '../../../src/cli/usage';
import { DAEMON_IDLE_MS, EXECUTOR_FILES } from '../../../src/client';

const bundles: Record<BundleName, object> = { askpass, mcp, mcpProxy, run, server };

test('every command is in the bundle the table names, and only there', () => {
  for (const [name, exports] of Object.entries(bundles)) {
    const want = Object.entries(COMMAND_BUNDLES)
      .filter(([, b]) => b === name)
      .map(([c]) => c)
      .sort();
    assert.deepEqual(Object.keys(exports).sort(), want, name);
    for (const c of want) assert.equal(typeof (exports as Record<string, unknown>)[c as CommandName], 'function', c);
  }
});

test("an SSH host's files hold the executor's commands: serve, daemon, connect", () => {
  for (const c of ['serve', 'daemon', 'connect'] as const) assert.ok(EXECUTOR_FILES.includes(`cli/${COMMAND_BUNDLES[c]}.js`), c);
});

test("connect's usage quotes the daemon's default idle time", () => {
  assert.match(CONNECT_USAGE, new RegExp(`\\(default ${DAEMON_IDLE_MS}\\)`));
});
