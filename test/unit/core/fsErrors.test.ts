import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DisconnectedError, OutcomeUnknownError, RemoteError, UnsupportedError } from '../../../src/client/errors';
import { classifyFsError, ExecutorFsError } from '../../../src/core/fsErrors';

const rpc = (code: number, message: string) => new RemoteError('fs/readFile', code, message, undefined);

test('server errors map to FileSystemError codes by OS error number, then by JSON-RPC code', () => {
  const cases: [RemoteError, string][] = [
    [rpc(-32004, 'No such file or directory (os error 2)'), 'FileNotFound'],
    [rpc(-32004, 'unknown file handle'), 'FileNotFound'],
    [rpc(-32603, 'File exists (os error 17)'), 'FileExists'],
    [rpc(-32603, 'Permission denied (os error 13)'), 'NoPermissions'],
    [rpc(-32603, 'Operation not permitted (os error 1)'), 'NoPermissions'],
    [rpc(-32603, 'Read-only file system (os error 30)'), 'NoPermissions'],
    [rpc(-32603, 'Not a directory (os error 20)'), 'FileNotADirectory'],
    [rpc(-32603, 'Is a directory (os error 21)'), 'FileIsADirectory'],
    [rpc(-32600, 'fs/readFile requires a file path, got a directory'), 'FileIsADirectory'],
    [rpc(-32603, 'Directory not empty (os error 39)'), 'Unknown'],
  ];
  for (const [e, code] of cases) assert.equal(classifyFsError(e).code, code, e.message);
});

test('a connection that is down is Unavailable; our own errors keep their code', () => {
  assert.equal(classifyFsError(new DisconnectedError('recoveryDeadline', 'gone')).code, 'Unavailable');
  assert.equal(classifyFsError(new OutcomeUnknownError('fs/writeFile')).code, 'Unavailable');
  assert.equal(classifyFsError(new UnsupportedError('no')).code, 'Unknown');
  assert.deepEqual(classifyFsError(new ExecutorFsError('FileExists', 'x exists')), { code: 'FileExists', message: 'x exists' });
  assert.equal(classifyFsError(new Error('boom')).code, 'Unknown');
});
