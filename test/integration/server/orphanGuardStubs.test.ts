/**
 * The orphan watchdog's placeholder clean-up (src/server/orphanGuard.ts), through the real /bin/sh:
 * when the server dies it removes its claims, `rmdir`s the stubs it made, and drops each marker
 * unless another server still claims that stub, so a `.vscode` the user made real inside a stub
 * is never left hidden by `files.exclude` (issue 24 item 1).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { OrphanGuard } from '../../../src/server/orphanGuard';
import { until } from '../../helpers/procs';

test('the watchdog drops a stub marker unless another server still claims the stub', { skip: process.platform === 'win32' }, async () => {
  const ws = mkdtempSync(join(tmpdir(), 'exec-bridge-guard-'));
  try {
    const claim = '.exec-bridge-claim-1-ours';
    const stub = (name: string, ...files: string[]) => {
      mkdirSync(join(ws, name));
      writeFileSync(join(ws, `${name}.exec-bridge-stub`), '');
      for (const f of [claim, ...files]) writeFileSync(join(ws, name, f), '');
      return join(ws, name, claim);
    };
    const guard = new OrphanGuard();
    // Ours alone: goes with its marker. The user's file in it: stays, unhidden. Another server's claim too: stays hidden.
    guard.addStub(stub('.codex'), true);
    guard.addStub(stub('.vscode', 'tasks.json'), true);
    guard.addStub(stub('.git', '.exec-bridge-claim-2-theirs'), true);
    // A stub the user removed while the server ran: its marker must not hide a .vscode made later.
    guard.addStub(stub('gone'), true);
    rmSync(join(ws, 'gone'), { recursive: true });
    const pid = guard.pid!;
    guard.dispose();
    await until(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      10_000,
      'the watchdog done',
    );
    assert.deepEqual(readdirSync(ws).sort(), ['.git', '.git.exec-bridge-stub', '.vscode']);
    assert.deepEqual(readdirSync(join(ws, '.vscode')), ['tasks.json']);
    assert.deepEqual(readdirSync(join(ws, '.git')), ['.exec-bridge-claim-2-theirs']);
    assert.ok(!existsSync(join(ws, '.vscode.exec-bridge-stub')));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
