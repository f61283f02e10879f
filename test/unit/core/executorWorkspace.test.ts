import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  executorWorkspaceFile,
  isExecutorWorkspaceFile,
  executorFoldersInFile,
  missingWorkspaceFolders,
  restrictedModeText,
  workspaceFilePlacement,
} from '../../../src/core/executorWorkspace';

const local = { uri: 'file:///home/me/proj', scheme: 'file', path: '/home/me/proj' };
const add = { uri: 'execbridge://bundled/srv/proj', name: 'bundled: /srv/proj', label: 'bundled-proj' };

test('the workspace file keeps the local folder as a path and adds the executor folder by URI', () => {
  const { fileName, text } = executorWorkspaceFile([local], add);
  assert.deepEqual(JSON.parse(text), {
    folders: [{ path: '/home/me/proj' }, { uri: 'execbridge://bundled/srv/proj', name: 'bundled: /srv/proj' }],
  });
  assert.match(fileName, /\.code-workspace$/);
});

test('its name is readable, safe and the same for the same folders', () => {
  const a = executorWorkspaceFile([local], add);
  assert.match(a.fileName, /^proj \+ bundled-proj-[0-9a-f]{8}\.code-workspace$/);
  assert.equal(executorWorkspaceFile([local], add).fileName, a.fileName);
  assert.notEqual(executorWorkspaceFile([local], { ...add, uri: 'execbridge://bundled/srv/other' }).fileName, a.fileName);
  assert.doesNotMatch(executorWorkspaceFile([local], { ...add, label: 'a/b\\c:d\n' }).fileName, /[/\\:\n]/);
});

test('non-file folders stay URIs with their names; a folder already there is not added twice', () => {
  const remote = { uri: 'execbridge://dev/home', scheme: 'execbridge', path: '/home', name: 'dev: /home' };
  const { text } = executorWorkspaceFile([local, remote], { uri: remote.uri, name: 'dev: /home', label: 'dev-home' });
  assert.deepEqual(JSON.parse(text).folders, [{ path: '/home/me/proj' }, { uri: 'execbridge://dev/home', name: 'dev: /home' }]);
});

test('missingWorkspaceFolders names what the file lists and the window does not show', () => {
  const { text } = executorWorkspaceFile([local], add);
  const exec = { uri: add.uri, scheme: 'execbridge', path: '/srv/proj' };
  assert.deepEqual(missingWorkspaceFolders(text, [local, exec]), []);
  assert.deepEqual(missingWorkspaceFolders(text, [{ ...local, path: '/home/me/proj/' }, exec]), []);
  assert.deepEqual(missingWorkspaceFolders(text, [exec]), [{ path: '/home/me/proj' }]);
  // The window that came up with no folders at all ("No Folder Opened").
  assert.deepEqual(missingWorkspaceFolders(text, []), [{ path: '/home/me/proj' }, { uri: add.uri, name: add.name }]);
  // A local folder of the same path on another scheme is not the file's path entry.
  assert.deepEqual(missingWorkspaceFolders(text, [{ ...local, scheme: 'vscode-remote' }, exec]), [{ path: '/home/me/proj' }]);
  assert.deepEqual(missingWorkspaceFolders('not json', []), []);
  assert.deepEqual(missingWorkspaceFolders('{"folders": 3}', []), []);
  // An entry with a path that is not a string is taken by its URI, as VS Code does; one with neither is no folder.
  assert.deepEqual(missingWorkspaceFolders('{"folders": [{"path": 3, "uri": "execbridge://b/x"}, {"name": "n"}, null]}', []), [
    { uri: 'execbridge://b/x' },
  ]);
});

test('a workspace file is read as VS Code reads it (comments, trailing commas), and its executor folders are named from it', () => {
  const text = `{
    // written by an older version, then edited
    "folders": [
      { "path": "/home/me/proj" },
      { "uri": "execbridge://devbox/srv/app", "name": "devbox: /srv/app" }, /* named */
      { "uri": "execbridge://bundled/tmp/x" },
      { "uri": "file:///elsewhere", "name": "not ours" },
    ],
  }`;
  assert.deepEqual(missingWorkspaceFolders(text, []).length, 4);
  assert.deepEqual(executorFoldersInFile(text, 'execbridge'), ['devbox: /srv/app', 'execbridge://bundled/tmp/x']);
  assert.deepEqual(executorFoldersInFile('{ "folders": [ { "uri": "execbridge://a/b" } ', 'execbridge'), []);
  assert.deepEqual(executorFoldersInFile('', 'execbridge'), []);
});

test('with workspace trust on, the workspace file goes into the trusted folder (a file elsewhere reopens the window untrusted)', () => {
  assert.equal(workspaceFilePlacement({ trustEnabled: true, trusted: true, folderWritable: true }), 'folder');
  // Nothing to trust: the user's folder is left alone.
  assert.equal(workspaceFilePlacement({ trustEnabled: false, trusted: true, folderWritable: true }), 'globalStorage');
  assert.equal(workspaceFilePlacement({ trustEnabled: true, trusted: true, folderWritable: false }), 'globalStorage');
});

test('our workspace files are known wherever they are; Restricted Mode is explained with what to click', () => {
  const global = '/home/me/.local/share/code-server/User/globalStorage/exec-bridge.exec-bridge/workspaces';
  assert.equal(isExecutorWorkspaceFile(`${global}/proj + bundled-x-0123abcd.code-workspace`, global), true);
  assert.equal(isExecutorWorkspaceFile('/home/me/proj/.vscode/exec-bridge/proj + bundled-x-0123abcd.code-workspace', global), true);
  assert.equal(isExecutorWorkspaceFile('/home/me/proj/team.code-workspace', global), false);
  assert.match(restrictedModeText(['bundled: /srv']), /Restricted Mode.*bundled: \/srv.*Click "Trust Workspace" below and then "Trust"/);
});
