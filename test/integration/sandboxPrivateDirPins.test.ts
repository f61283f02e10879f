/**
 * A private directory one folder below a writable root (`XDG_RUNTIME_DIR=/tmp/runtime-u`, or
 * `EXEC_BRIDGE_RUNTIME_DIR=/tmp/x/run` as this machine's CI servers have it): every sandbox hides
 * it under a tmpfs, but the folder above it was the command's to rename. The tmpfs went along,
 * the command made the directory again at its old path, and the server wrote its seccomp program
 * there, where the command swapped in one that allows everything; the next sandbox loaded it and
 * made a user namespace and reached host unix sockets (measured by a review, session 17). The
 * folder above is pinned now (bound onto itself: EBUSY). Real server, loopback only.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { RawClient, startParams, startServer, type StartedServer } from '../helpers/rawClient';

// Under /tmp: the writable root a workspace-write sandbox shares.
const base = realpathSync(mkdtempSync('/tmp/eb-pins-'));
const above = join(base, 'rt');
const runtime = join(above, 'run');
const ws = join(base, 'ws');
const uri = (p: string) => pathToFileURL(p).href;

describe('the folders above a private directory', { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' }, () => {
  let server: StartedServer;
  let client: RawClient;
  let n = 0;

  before(async () => {
    mkdirSync(ws, { recursive: true });
    mkdirSync(above, { mode: 0o700 });
    server = await startServer('ours', [], { ...process.env, EXEC_BRIDGE_RUNTIME_DIR: runtime });
    client = (await RawClient.session(server.url)).client;
  });

  after(async () => {
    client?.close();
    await server?.stop();
    rmSync(base, { recursive: true, force: true });
  });

  async function run(script: string, network = false): Promise<string> {
    const processId = `p${++n}`;
    const sandbox = sandboxForPolicy({ policy: 'workspace-write', network, cwd: uri(ws) });
    const res = await client.call('process/start', startParams(processId, ['/bin/sh', '-c', script], { cwd: uri(ws), sandbox }));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    await client.processEvents(processId);
    return client.output(processId);
  }

  test('cannot be renamed or removed by a sandboxed command, so the directory cannot be made again under it', async () => {
    assert.ok(existsSync(runtime), 'the server made its private directory');
    for (const network of [false, true]) {
      const out = await run(
        `mv '${above}' '${above}.away' 2>&1; echo mv=$?; rm -rf '${above}' 2>&1 | tail -1; ` +
          `mkdir -p '${runtime}/sandbox' 2>&1 && echo made-again; ls '${runtime}' 2>&1 | head -1`,
        network,
      );
      assert.match(out, /Device or resource busy/, out);
      assert.match(out, /mv=1\n/, out);
      assert.doesNotMatch(out, /made-again/, out);
      assert.equal(existsSync(`${above}.away`), false);
      assert.ok(existsSync(runtime), `network ${network}: the private directory is where the server made it`);
    }
    // The filter that later sandboxes load is still the server's: no user namespace.
    const after = await run('unshare -Ur true 2>&1; echo unshare=$?');
    assert.match(after, /unshare=1\n/, after);
  });
});
