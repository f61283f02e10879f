import * as assert from 'node:assert/strict';
import { suite, test } from 'mocha';
import * as vscode from 'vscode';

suite('activation', () => {
  test('the extension activates', async () => {
    const ext = vscode.extensions.getExtension('exec-bridge.exec-bridge');
    assert.ok(ext, 'extension is installed');
    await ext.activate();
    assert.equal(ext.isActive, true);
  });
});
