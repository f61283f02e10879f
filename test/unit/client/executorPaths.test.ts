import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultExecutorDir, executorPath } from '../../../src/client/executorPaths';
import type { EnvironmentInfo } from '../../../src/protocol/environment';

const info = (dirs: Partial<Pick<EnvironmentInfo, 'userHomeDir' | 'cwd'>>) => dirs as EnvironmentInfo;

test('executorPath: file: URIs become paths; anything else is no path', () => {
  assert.equal(executorPath('file:///home/u/a%20b'), '/home/u/a b');
  assert.equal(executorPath(undefined), undefined);
  assert.equal(executorPath('/home/u'), undefined);
  assert.equal(executorPath('file://elsewhere/x'), undefined, 'a remote-host URI is not in local form');
});

test('defaultExecutorDir: the home directory first, then the server cwd, else none', () => {
  assert.equal(defaultExecutorDir(info({ userHomeDir: 'file:///home/u', cwd: 'file:///' })), '/home/u');
  assert.equal(defaultExecutorDir(info({ cwd: 'file:///srv' })), '/srv');
  assert.equal(defaultExecutorDir(info({ userHomeDir: 'not-a-uri', cwd: 'file:///srv' })), '/srv');
  assert.equal(defaultExecutorDir(undefined), undefined);
});
