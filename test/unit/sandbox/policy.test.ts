import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ProcessStartParams } from '../../../src/protocol/process';
import { SandboxContext, sandboxForPolicy } from '../../../src/protocol/sandbox';
import { bwrapArgs } from '../../../src/server/sandbox/bwrapArgs';
import { computeLayout } from '../../../src/server/sandbox/layout';
import { resolvePolicy, SandboxUnsupportedError } from '../../../src/server/sandbox/policy';

const uri = (p: string) => pathToFileURL(p).href;
const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'sbx-policy-')));
after(() => rmSync(scratch, { recursive: true, force: true }));

// Shapes the codex 0.171.0 binary accepted on `process/start` (probed; see docs/sandbox.md).
const CODEX_READ_ONLY = {
  permissions: {
    type: 'managed',
    file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' }] },
    network: 'restricted',
  },
  windowsSandboxLevel: 'disabled',
};
const CODEX_WORKSPACE = {
  permissions: {
    type: 'managed',
    file_system: {
      type: 'restricted',
      entries: [
        { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
        { path: { type: 'special', value: { kind: 'project_roots' } }, access: 'write' },
        { path: { type: 'special', value: { kind: 'slash_tmp' } }, access: 'write' },
        { path: { type: 'path', path: 'file:///srv/extra' }, access: 'write' },
      ],
    },
    network: 'enabled',
  },
  cwd: 'file:///srv/ws',
  workspaceRoots: ['file:///srv/ws'],
  windowsSandboxLevel: 'disabled',
};

test('the schema accepts the shapes codex 0.171 accepts and rejects what it rejects', () => {
  for (const ok of [
    CODEX_READ_ONLY,
    CODEX_WORKSPACE,
    { permissions: { type: 'disabled' }, windowsSandboxLevel: 'disabled' },
    { permissions: { type: 'external', network: 'restricted' }, windowsSandboxLevel: 'elevated' },
  ]) {
    assert.equal(SandboxContext.safeParse(ok).success, true, JSON.stringify(ok));
  }
  const bad = [
    {},
    { permissions: {} },
    { permissions: { type: 'x' } },
    { permissions: { type: 'managed', file_system: { type: 'restricted' }, network: 'restricted' } },
    { permissions: { type: 'managed', file_system: { type: 'unrestricted' }, network: 'x' } },
    {
      permissions: {
        type: 'managed',
        file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'x' } }, access: 'read' }] },
        network: 'restricted',
      },
    },
    {
      permissions: {
        type: 'managed',
        file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'root' } }, access: 'x' }] },
        network: 'restricted',
      },
    },
    { permissions: { type: 'disabled' }, windowsSandboxLevel: 'x' },
    { permissions: { type: 'managed', file_system: { type: 'restricted', entries: [], glob_scan_max_depth: 0 }, network: 'restricted' } },
  ];
  for (const b of bad) assert.equal(SandboxContext.safeParse(b).success, false, JSON.stringify(b));
  // It is the `sandbox` field of process/start, null allowed.
  const start = { processId: 'p', argv: ['true'], cwd: 'file:///', env: {}, tty: false };
  assert.equal(ProcessStartParams.safeParse({ ...start, sandbox: null }).success, true);
  assert.equal(ProcessStartParams.safeParse({ ...start, sandbox: CODEX_WORKSPACE }).success, true);
  assert.equal(ProcessStartParams.safeParse({ ...start, sandbox: { permissions: { type: 'nope' } } }).success, false);
});

test('sandboxForPolicy builds codex-shaped values for the three policies', () => {
  const ro = sandboxForPolicy({ policy: 'read-only', cwd: 'file:///w' });
  assert.deepEqual(ro, { cwd: 'file:///w', windowsSandboxLevel: 'disabled', permissions: CODEX_READ_ONLY.permissions });
  const ww = SandboxContext.parse(
    sandboxForPolicy({
      policy: 'workspace-write',
      cwd: 'file:///w',
      network: true,
      writableRoots: ['file:///x'],
      readOnlyPaths: ['file:///w/secret'],
    }),
  );
  assert.deepEqual(ww.workspaceRoots, ['file:///w']);
  assert.equal(ww.permissions.type === 'managed' && ww.permissions.network, 'enabled');
  assert.deepEqual(sandboxForPolicy({ policy: 'full-access', cwd: 'file:///w', network: true }).permissions, { type: 'disabled' });
  assert.deepEqual(sandboxForPolicy({ policy: 'full-access', cwd: 'file:///w' }).permissions, {
    type: 'managed',
    file_system: { type: 'unrestricted' },
    network: 'restricted',
  });
});

test('resolvePolicy: absent, disabled and full-access-with-network mean no sandbox', () => {
  for (const sb of [
    undefined,
    null,
    { permissions: { type: 'disabled' } },
    { permissions: { type: 'external', network: 'enabled' } },
    sandboxForPolicy({ policy: 'full-access', cwd: 'file:///', network: true }),
  ]) {
    assert.equal(resolvePolicy(sb, '/w', {}).unrestricted, true);
  }
  const netOnly = resolvePolicy(sandboxForPolicy({ policy: 'full-access', cwd: 'file:///w' }), '/w', {});
  assert.deepEqual([netOnly.unrestricted, netOnly.fs, netOnly.network], [false, 'unrestricted', 'restricted']);
  assert.deepEqual([resolvePolicy({ permissions: { type: 'external', network: 'restricted' } }, '/w', {}).fs], ['unrestricted']);
});

test('resolvePolicy resolves special paths, precedence and scratch areas', () => {
  const p = resolvePolicy(
    {
      permissions: {
        type: 'managed',
        network: 'restricted',
        file_system: {
          type: 'restricted',
          entries: [
            { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
            { path: { type: 'special', value: { kind: 'project_roots', subpath: 'sub' } }, access: 'write' },
            { path: { type: 'special', value: { kind: 'current_working_directory' } }, access: 'read' },
            { path: { type: 'special', value: { kind: 'tmpdir' } }, access: 'write' },
            { path: { type: 'special', value: { kind: 'slash_tmp' } }, access: 'write' },
            { path: { type: 'path', path: 'file:///a/b/' }, access: 'read' },
            { path: { type: 'path', path: 'file:///a/b' }, access: 'write' },
            { path: { type: 'path', path: 'file:///a/b' }, access: 'none' },
            { path: { type: 'special', value: { kind: 'unknown', path: ':future' } }, access: 'write' },
          ],
        },
      },
      cwd: 'file:///anchor',
      workspaceRoots: ['file:///r1', 'file:///r2'],
    },
    '/proc-cwd',
    { TMPDIR: '/var/tmp/me' },
  );
  const byPath = Object.fromEntries(p.rules.map((r) => [r.path, r]));
  assert.equal(byPath['/']!.access, 'read');
  assert.equal(byPath['/r1/sub']!.access, 'write');
  assert.equal(byPath['/r2/sub']!.access, 'write');
  assert.equal(byPath['/anchor']!.access, 'read');
  assert.deepEqual(byPath['/var/tmp/me'], { path: '/var/tmp/me', access: 'write', scratch: true });
  assert.deepEqual(byPath['/tmp'], { path: '/tmp', access: 'write', scratch: true });
  assert.equal(byPath['/a/b']!.access, 'deny', 'deny > write > read, trailing slash normalised');
  assert.equal(p.rules.length, 7, 'unknown tokens are ignored for read/write');
  assert.equal(p.cwd, '/proc-cwd');
});

test('resolvePolicy: project_roots without workspaceRoots means the anchor; TMPDIR=/ is ignored', () => {
  const p = resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: 'file:///w' }), '/elsewhere', { TMPDIR: '/' });
  assert.deepEqual(
    p.rules.map((r) => r.path),
    ['/', '/w', '/tmp'],
  );
  const q = resolvePolicy(
    {
      permissions: {
        type: 'managed',
        network: 'enabled',
        file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'project_roots' } }, access: 'write' }] },
      },
    },
    '/cwd',
    {},
  );
  assert.deepEqual(q.rules, [{ path: '/cwd', access: 'write' }]);
});

test('resolvePolicy refuses what it cannot enforce', () => {
  const mk = (entry: unknown) => ({
    permissions: { type: 'managed', network: 'restricted', file_system: { type: 'restricted', entries: [entry] } },
  });
  assert.throws(
    () => resolvePolicy(mk({ path: { type: 'glob_pattern', pattern: '**/*.env' }, access: 'deny' }), '/', {}),
    SandboxUnsupportedError,
  );
  assert.throws(
    () => resolvePolicy(mk({ path: { type: 'special', value: { kind: 'unknown', path: ':x' } }, access: 'deny' }), '/', {}),
    SandboxUnsupportedError,
  );
  assert.throws(
    () => resolvePolicy(mk({ path: { type: 'special', value: { kind: 'project_roots', subpath: '../up' } }, access: 'write' }), '/w', {}),
    SandboxUnsupportedError,
  );
  assert.throws(() => resolvePolicy({ permissions: { type: 'nope' } }, '/', {}), SandboxUnsupportedError);
  assert.throws(
    () => resolvePolicy(mk({ path: { type: 'path', path: '/plain/path' }, access: 'read' }), '/', {}),
    /relative URL without a base/,
  );
});

test('layout: carve-outs inside writable roots (dir, gitdir file and target, missing), none in scratch roots', () => {
  const ws = join(scratch, 'ws');
  const wt = join(scratch, 'wt');
  mkdirSync(join(ws, '.git'), { recursive: true });
  mkdirSync(join(ws, '.git', 'worktrees', 'wt'), { recursive: true });
  mkdirSync(wt, { recursive: true });
  writeFileSync(join(wt, '.git'), `gitdir: ${join(ws, '.git', 'worktrees', 'wt')}\n`);
  const policy = resolvePolicy(
    { ...sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws), workspaceRoots: [uri(ws), uri(wt)] }) },
    ws,
    {},
  );
  const layout = computeLayout(policy);
  assert.equal(layout.root, 'ro');
  assert.equal(layout.tmp, 'shared');
  const mounts = layout.mounts.map((m) => `${m.kind} ${m.path}`);
  assert.ok(mounts.includes(`bind ${ws}`));
  assert.ok(mounts.includes(`ro-bind ${ws}/.git`));
  assert.ok(mounts.includes(`placeholder ${ws}/.vscode`));
  assert.ok(mounts.includes(`placeholder ${ws}/.codex`));
  assert.ok(mounts.includes(`ro-bind ${wt}/.git`), 'the gitdir pointer file');
  for (const name of ['.git', '.vscode', '.codex']) assert.ok(!mounts.includes(`placeholder /tmp/${name}`), 'no carve-outs in /tmp');
  // The worktree's gitdir lies inside ws/.git, which is already protected (a deeper ro-bind is harmless).
  assert.ok(layout.protectedPaths.includes(join(ws, '.git', 'worktrees', 'wt')));
  // Order: each root before its carve-outs.
  assert.ok(mounts.indexOf(`bind ${ws}`) < mounts.indexOf(`ro-bind ${ws}/.git`));
  assert.ok(mounts.indexOf(`bind /tmp`) < mounts.indexOf(`bind ${ws}`) || !ws.startsWith('/tmp/'), '/tmp before roots below it');
});

test('layout: symlinked roots bind their target; a private /tmp keeps a cwd below it visible', () => {
  const real = join(scratch, 'real');
  mkdirSync(real, { recursive: true });
  const link = join(scratch, 'link');
  symlinkSync(real, link);
  const ro = computeLayout(resolvePolicy(sandboxForPolicy({ policy: 'read-only', cwd: uri(link) }), link, {}));
  assert.equal(ro.tmp, 'private');
  assert.equal(ro.mounts[0]!.kind, 'tmpfs');
  if (real.startsWith('/tmp/')) assert.deepEqual(ro.mounts[1], { kind: 'ro-bind', path: real });
  const ww = computeLayout(resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: uri(link) }), link, {}));
  assert.ok(ww.writableRoots.includes(real));
  assert.ok(ww.mounts.some((m) => m.kind === 'bind' && m.path === real));
});

test('bwrapArgs: the hard requirements are in the argv, in a working order', () => {
  const ws = join(scratch, 'ws');
  const layout = computeLayout(resolvePolicy(sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) }), ws, {}));
  const args = bwrapArgs({
    layout,
    network: 'restricted',
    cwd: ws,
    argv: ['/bin/echo', 'hi'],
    seccompFd: 3,
    tty: false,
    asRoot: true,
    hidden: ['/tmp/state'],
  });
  const has = (...seq: string[]) => args.some((_, i) => seq.every((s, j) => args[i + j] === s));
  for (const flag of ['--unshare-user', '--unshare-pid', '--unshare-net', '--die-with-parent', '--new-session'])
    assert.ok(args.includes(flag), flag);
  assert.ok(has('--ro-bind', '/', '/'));
  assert.ok(has('--dev', '/dev'));
  assert.ok(has('--proc', '/proc'));
  assert.ok(has('--ro-bind-try', '/proc/sys', '/proc/sys'));
  assert.ok(has('--cap-drop', 'ALL'));
  assert.ok(has('--seccomp', '3'));
  assert.ok(has('--bind', ws, ws));
  assert.ok(has('--perms', '555', '--tmpfs', `${ws}/.codex`, '--remount-ro', `${ws}/.codex`));
  assert.ok(
    has('--perms', '000', '--tmpfs', '/tmp/state', '--remount-ro', '/tmp/state'),
    'our private dir hidden behind an inaccessible tmpfs',
  );
  assert.ok(args.lastIndexOf('/tmp/state') > args.lastIndexOf('--bind'), 'hidden after every bind, so no bind exposes it');
  assert.ok(args.indexOf('--proc') > args.indexOf('--unshare-pid'));
  assert.ok(args.lastIndexOf('--ro-bind') < args.indexOf('--cap-drop'));
  assert.deepEqual(args.slice(-5), ['--chdir', ws, '--', '/bin/echo', 'hi']);

  const tty = bwrapArgs({ layout, network: 'enabled', cwd: ws, argv: ['/bin/x'], arg0: 'y', tty: true, asRoot: false });
  assert.ok(!tty.includes('--new-session') && !tty.includes('--unshare-net') && !tty.includes('--seccomp'));
  assert.ok(!tty.includes('/proc/sys'), 'non-root needs no /proc hardening');
  assert.deepEqual(tty.slice(tty.indexOf('--') + 1), ['/bin/bash', '--norc', '--noprofile', '-c', 'exec -a "$0" "$@"', 'y', '/bin/x']);
});

test('bwrapArgs: restricted read starts from an empty root with the system directories', () => {
  const ws = join(scratch, 'ws');
  const policy = resolvePolicy(
    {
      permissions: {
        type: 'managed',
        network: 'enabled',
        file_system: {
          type: 'restricted',
          entries: [
            { path: { type: 'special', value: { kind: 'minimal' } }, access: 'read' },
            { path: { type: 'path', path: uri(ws) }, access: 'write' },
          ],
        },
      },
    },
    ws,
    {},
  );
  const layout = computeLayout(policy);
  assert.equal(layout.root, 'empty');
  const args = bwrapArgs({ layout, network: 'enabled', cwd: ws, argv: ['/bin/true'], tty: false, asRoot: false });
  assert.ok(!args.includes('/') || args.indexOf('--remount-ro') >= 0);
  assert.ok(args.join(' ').includes('--ro-bind-try /usr /usr'));
  assert.ok(args.join(' ').includes('--remount-ro /'));
});
