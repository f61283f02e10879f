import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { after, test } from 'node:test';
import { RemoteError } from '../../../src/client';
import { ExecServer } from '../../../src/server/execServer';
import { connectInProcess } from '../../helpers/inProcessServer';

// Our real server (its default planner cannot sandbox), in process over a memory transport.
const server = new ExecServer({ sandboxPrewarmMs: 0 });
after(() => server.close());

test('a JSON-RPC error keeps its code, the server message and data; the wire message is as before', async (t) => {
  const client = await connectInProcess(server);
  t.after(() => client.dispose());
  // An ordinary start first: it waits for the server's FIFO pool, so none is being made at close.
  assert.equal((await (await client.startProcess({ argv: ['/bin/true'], cwd: tmpdir() })).completion).exitCode, 0);
  const sandbox = { cwd: `file://${tmpdir()}`, windowsSandboxLevel: 'disabled' as const, permissions: { type: 'disabled' as const } };
  const err = await client.startProcess({ argv: ['/bin/true'], cwd: tmpdir(), sandbox }).then(
    () => assert.fail('a sandboxed start must be refused'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RemoteError);
  const reason = 'this exec-server was started without sandbox support; refusing to run the command unsandboxed';
  assert.equal(err.code, -32603);
  assert.equal(err.serverMessage, `sandbox unavailable: ${reason}`);
  assert.deepEqual(err.data, { kind: 'sandboxUnavailable', reason });
  assert.equal(err.message, `process/start failed: sandbox unavailable: ${reason} (code -32603)`);
});
