import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  parseTaskDefinition,
  resolveTask,
  resolveVariables,
  type ExecTaskDefinition,
  type ResolveContext,
} from '../../../src/core/taskDefinition';

const ok = (raw: unknown): ExecTaskDefinition => {
  const r = parseTaskDefinition(raw);
  assert.ok(r.ok, r.ok ? '' : r.error);
  return r.value;
};
const bad = (raw: unknown): string => {
  const r = parseTaskDefinition(raw);
  assert.ok(!r.ok, `expected a refusal of ${JSON.stringify(raw)}`);
  return r.error;
};

test('a definition needs command or args, and typed fields', () => {
  assert.deepEqual(ok({ type: 'execBridge', command: 'make test', label: 'ignored' }), { type: 'execBridge', command: 'make test' });
  assert.deepEqual(ok({ type: 'execBridge', args: ['ls', '-l'], sandbox: 'none', env: { A: '1' } }), {
    type: 'execBridge',
    args: ['ls', '-l'],
    sandbox: 'none',
    env: { A: '1' },
  });
  assert.match(bad({ type: 'execBridge' }), /"command".*"args"/);
  assert.match(bad({ type: 'shell', command: 'x' }), /not "execBridge"/);
  assert.match(bad({ type: 'execBridge', command: '  ' }), /non-empty/);
  assert.match(bad({ type: 'execBridge', args: ['a', 1] }), /array of strings/);
  assert.match(bad({ type: 'execBridge', command: 'x', env: { A: 1 } }), /"env"/);
  assert.match(bad({ type: 'execBridge', command: 'x', sandbox: 'loose' }), /read-only, workspace-write, full-access, none/);
  assert.match(bad({ type: 'execBridge', command: 'x', cwd: 'rel/dir' }), /absolute/);
  assert.match(bad({ type: 'execBridge', command: 'x', executorRoot: 'srv' }), /absolute/);
  assert.match(bad(null), /not an object/);
});

test('variables resolve; an unknown one is an error, not text for the executor', () => {
  const ctx = { workspaceFolder: '/home/me/proj', file: '/home/me/proj/src/a.ts', env: { NAME: 'v' } };
  assert.deepEqual(
    resolveVariables('${workspaceFolder}/x ${workspaceFolderBasename} ${relativeFile} ${fileDirname} ${env:NAME}${env:NOPE}', ctx),
    {
      ok: true,
      value: '/home/me/proj/x proj src/a.ts /home/me/proj/src v',
    },
  );
  assert.deepEqual(resolveVariables('${fileBasenameNoExtension}${fileExtname}', ctx), { ok: true, value: 'a.ts' });
  assert.deepEqual(resolveVariables('${input:pick}', ctx), { ok: false, error: 'cannot resolve ${input:pick} here' });
  assert.equal(resolveVariables('${file}', { env: {} }).ok, false);
});

const bundled: ResolveContext = { shell: '/bin/bash', defaultCwd: '/home/me', local: true, workspaceFolder: '/home/me/proj', env: {} };

test('on the bundled executor: command runs with the shell in the workspace folder', () => {
  const r = resolveTask(ok({ type: 'execBridge', command: 'tsc -p ${workspaceFolder}', args: ['a b'] }), bundled);
  assert.ok(r.ok);
  assert.deepEqual(r.value.argv, ['/bin/bash', '-c', "tsc -p /home/me/proj 'a b'"]);
  assert.equal(r.value.cwd, '/home/me/proj');
  assert.deepEqual(r.value.mapping, { local: '/home/me/proj', executor: '/home/me/proj' });
  const a = resolveTask(ok({ type: 'execBridge', args: ['ls', '${workspaceFolder}'], cwd: '/tmp' }), bundled);
  assert.ok(a.ok);
  assert.deepEqual([a.value.argv, a.value.cwd, a.value.commandLine], [['ls', '/home/me/proj'], '/tmp', 'ls /home/me/proj']);
});

test('on a remote executor: local workspace paths become executorRoot paths', () => {
  const remote: ResolveContext = { ...bundled, local: false, defaultCwd: '/home/dev' };
  const def = ok({
    type: 'execBridge',
    command: 'make -C ${workspaceFolder}/sub',
    cwd: '${workspaceFolder}/sub',
    executorRoot: '/srv/proj',
    env: { OUT: '${workspaceFolder}' },
  });
  const r = resolveTask(def, remote);
  assert.ok(r.ok);
  assert.equal(r.value.commandLine, 'make -C /srv/proj/sub');
  assert.equal(r.value.cwd, '/srv/proj/sub');
  assert.deepEqual(r.value.env, { OUT: '/srv/proj' });
  // `/home/me/project` is not inside `/home/me/proj`.
  const s = resolveTask(ok({ type: 'execBridge', command: 'cat /home/me/project/x /home/me/proj', executorRoot: '/srv/proj' }), remote);
  assert.ok(s.ok);
  assert.equal(s.value.commandLine, 'cat /home/me/project/x /srv/proj');
  // No executorRoot and no configured folder: no mapping, the executor's default cwd.
  const n = resolveTask(ok({ type: 'execBridge', command: 'pwd' }), remote);
  assert.ok(n.ok);
  assert.deepEqual([n.value.cwd, n.value.mapping], ['/home/dev', undefined]);
  // The executor's configured folder is the default root.
  const c = resolveTask(ok({ type: 'execBridge', command: 'pwd' }), { ...remote, executorCwd: '/work/p' });
  assert.ok(c.ok);
  assert.deepEqual([c.value.cwd, c.value.mapping], ['/work/p', { local: '/home/me/proj', executor: '/work/p' }]);
});

test('an unresolvable variable fails the task before it starts', () => {
  const r = resolveTask(ok({ type: 'execBridge', command: 'echo ${command:foo}' }), bundled);
  assert.deepEqual(r, { ok: false, error: 'cannot resolve ${command:foo} here' });
});
