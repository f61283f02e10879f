import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { sandboxForPolicy } from '../../../src/protocol/sandbox';
import { findSystemTool, SYSTEM_PATH } from '../../../src/server/executables';
import { explainProbeFailure, findBwrap, SandboxPlanner, SandboxUnavailableError } from '../../../src/server/sandbox';

const dir = mkdtempSync(join(tmpdir(), 'sbx-planner-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('no sandbox (absent, null, disabled, full access with network) plans the command as it is', async () => {
  const planner = new SandboxPlanner({ platform: 'win32' });
  for (const sandbox of [
    undefined,
    null,
    { permissions: { type: 'disabled' } },
    sandboxForPolicy({ policy: 'full-access', network: true, cwd: 'file:///' }),
  ]) {
    const plan = await planner.plan({ argv: ['/bin/echo', 'a b'], arg0: null, cwd: '/', env: { A: '1' }, tty: false, sandbox });
    assert.deepEqual(
      [plan.file, plan.args, plan.cwd, plan.env, plan.sandboxType, plan.restricted],
      ['/bin/echo', ['a b'], '/', { A: '1' }, 'none', false],
    );
    assert.equal(plan.isDenial(1, [Buffer.from("touch: cannot touch '/x': Read-only file system")]), false);
    plan.dispose();
    plan.dispose();
  }
});

test('a platform without a sandbox refuses sandboxed starts', async () => {
  for (const platform of ['win32', 'freebsd'] as const) {
    await assert.rejects(
      new SandboxPlanner({ platform }).plan({
        argv: ['/bin/true'],
        cwd: '/',
        env: {},
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'read-only', cwd: 'file:///' }),
      }),
      (e: Error) => e instanceof SandboxUnavailableError && e.message.includes(platform) && /not run/.test(e.message),
    );
  }
});

test('findBwrap: explicit path, BWRAP_PATH, then the system folders; a clear install hint otherwise', () => {
  const fake = join(dir, 'bwrap');
  writeFileSync(fake, '#!/bin/sh\n');
  chmodSync(fake, 0o755);
  assert.equal(findBwrap(fake, {}), fake);
  assert.equal(findBwrap(undefined, { BWRAP_PATH: fake }), fake);
  assert.equal(findBwrap(undefined, {}, ['/nonexistent', dir]), fake);
  assert.throws(() => findBwrap(join(dir, 'missing'), {}), /is not an executable file/);
  // Not found: it says where it looked, and how to fix it.
  assert.throws(
    () => findBwrap(undefined, { PATH: dir }, ['/nonexistent', '/nonexistent2']),
    (e) =>
      e instanceof SandboxUnavailableError &&
      /in none of \/nonexistent, \/nonexistent2 .*PATH is not searched.*apt-get install -y bubblewrap/.test(e.message),
  );
});

test("findBwrap: a bwrap planted in a folder first on the server's PATH (an activated .venv/bin) is never chosen", () => {
  const venvBin = join(dir, 'ws', '.venv', 'bin');
  mkdirSync(venvBin, { recursive: true });
  const planted = join(venvBin, 'bwrap');
  writeFileSync(planted, '#!/bin/sh\ntouch /tmp/pwned\n');
  chmodSync(planted, 0o755);
  const env = { PATH: `${venvBin}:${SYSTEM_PATH}` };
  const system = findSystemTool('bwrap');
  if (system === undefined) assert.throws(() => findBwrap(undefined, env), SandboxUnavailableError);
  else assert.equal(findBwrap(undefined, env), system);
  assert.throws(() => findBwrap(undefined, env, []), SandboxUnavailableError);
});

test('probe failures become fix-it messages', () => {
  assert.match(explainProbeFailure('bwrap: setting up uid map: Permission denied'), /user namespaces are not available.*sysctl/);
  assert.match(
    explainProbeFailure(
      'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.',
    ),
    /apparmor_restrict_unprivileged_userns/,
  );
  assert.match(explainProbeFailure("bwrap: Can't mount proc on /newroot/proc: Device or resource busy"), /private \/proc/);
  assert.match(explainProbeFailure('something else'), /check that bwrap works/);
});

test('macOS plans sandbox-exec with the generated profile (not runnable here: the plan is checked)', async () => {
  const ws = mkdtempSync(join(dir, 'ws-'));
  const plan = await new SandboxPlanner({ platform: 'darwin' }).plan({
    argv: ['/bin/sh', '-c', 'true'],
    arg0: 'custom',
    cwd: ws,
    env: { PATH: '/usr/bin:/bin' },
    tty: false,
    sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: `file://${ws}` }),
  });
  assert.equal(plan.file, '/usr/bin/sandbox-exec');
  assert.equal(plan.sandboxType, 'macosSeatbelt');
  assert.equal(plan.restricted, true);
  assert.equal(plan.args[0], '-p');
  assert.match(plan.args[1]!, /^\(version 1\)\n\(deny default\)/);
  assert.ok(plan.args.includes(`-DWRITABLE_ROOT_0=${ws}`) || plan.args.some((a) => a.startsWith('-DWRITABLE_ROOT_') && a.endsWith(ws)));
  assert.ok(
    plan.args.some((a) => a.endsWith(`${ws}/.git`)),
    'a missing .git is still excluded from writes',
  );
  assert.deepEqual(plan.args.slice(plan.args.indexOf('--') + 1), [
    '/bin/bash',
    '--norc',
    '--noprofile',
    '-c',
    'exec -a "$0" "$@"',
    'custom',
    '/bin/sh',
    '-c',
    'true',
  ]);
  assert.equal(plan.isDenial(1, [Buffer.from(`touch: ${ws}/.git/x: Operation not permitted\n`)]), true);
  plan.dispose();
});
