// Tasks follow the same approval rules as terminals and tools (every run is built by
// core/executorRun.ts): under askBeforeRun an `execBridge` task asks before it runs, and an
// always-allowed task starts once, without the sandbox (it used to run sandboxed and then again).
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { PendingApproval } from '../../../src/vscode/api';
import { getApi, withSettings } from './helpers';

function endOf(name: string, timeoutMs = 30_000): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`task ${name} did not end within ${timeoutMs} ms`));
    }, timeoutMs);
    const sub = vscode.tasks.onDidEndTaskProcess((e) => {
      if (e.execution.task.name !== name) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(e.exitCode);
    });
  });
}

async function task(name: string): Promise<vscode.Task> {
  let found: vscode.Task | undefined;
  for (let i = 0; i < 80 && !found; i++) {
    found = (await vscode.tasks.fetchTasks({ type: 'execBridge' })).find((t) => t.name === name);
    if (!found) await new Promise((r) => setTimeout(r, 250));
  }
  assert.ok(found, `task ${name} is not in tasks.json`);
  return found;
}

/** Runs task `name` to its end, answering each approval notification with `answer(p)`; returns its exit code and the questions. */
async function runTask(name: string, answer: (p: PendingApproval) => Parameters<PendingApproval['respond']>[0]) {
  const api = await getApi();
  const asked: PendingApproval['kind'][] = [];
  const sub = api.onDidRequestApproval((p) => {
    asked.push(p.kind);
    p.respond(answer(p));
  });
  try {
    const ended = endOf(name);
    await vscode.tasks.executeTask(await task(name));
    return { exitCode: await ended, asked };
  } finally {
    sub.dispose();
  }
}

suite('tasks and the approval policy', () => {
  let folder: string;
  let restore: () => Promise<void>;
  const outside = join(homedir(), 'eb-task-always.marker');

  suiteSetup(async () => {
    restore = await withSettings({ sandbox: 'workspace-write', sandboxNetwork: false, approvalPolicy: 'ask' });
    await (await getApi()).connect('bundled');
    folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    mkdirSync(join(folder, '.vscode'), { recursive: true });
    for (const f of ['task-asked.marker', 'task-attempts.txt']) rmSync(join(folder, f), { force: true });
    const tasks = {
      version: '2.0.0',
      tasks: [
        { label: 'eb-ask', type: 'execBridge', command: 'echo ran > task-asked.marker', problemMatcher: [] },
        // Each attempt leaves a line in the workspace (allowed), then writes outside it (denied in the sandbox).
        { label: 'eb-always', type: 'execBridge', command: `echo attempt >> task-attempts.txt; touch '${outside}'`, problemMatcher: [] },
      ],
    };
    writeFileSync(join(folder, '.vscode', 'tasks.json'), JSON.stringify(tasks, null, 2));
  });
  suiteTeardown(async () => {
    rmSync(join(folder, '.vscode', 'tasks.json'), { force: true });
    for (const f of ['task-asked.marker', 'task-attempts.txt']) rmSync(join(folder, f), { force: true });
    rmSync(outside, { force: true });
    await vscode.commands.executeCommand('execBridge.forgetAlwaysAllowed');
    await restore();
  });

  test('askBeforeRun: an execBridge task asks before it runs; Deny runs nothing', async function () {
    this.timeout(60_000);
    const undo = await withSettings({ approvalPolicy: 'askBeforeRun' });
    try {
      const { exitCode, asked } = await runTask('eb-ask', () => 'Deny');
      assert.deepEqual(asked, ['beforeRun'], 'asked before it ran');
      assert.notEqual(exitCode, 0);
      assert.equal(existsSync(join(folder, 'task-asked.marker')), false, 'nothing ran');
      const approved = await runTask('eb-ask', () => 'Run in Sandbox');
      assert.equal(approved.exitCode, 0);
      assert.equal(readFileSync(join(folder, 'task-asked.marker'), 'utf8'), 'ran\n');
    } finally {
      await undo();
    }
  });

  test('an always-allowed task starts once, without the sandbox (not sandboxed and then again)', async function () {
    this.timeout(60_000);
    const first = await runTask('eb-always', (p) => (p.kind === 'denied' ? 'Always Allow This Command' : 'Deny'));
    assert.deepEqual(first.asked, ['denied']);
    assert.equal(first.exitCode, 0);
    const attempts = () => readFileSync(join(folder, 'task-attempts.txt'), 'utf8').split('\n').filter(Boolean).length;
    assert.equal(attempts(), 2, 'blocked in the sandbox, then approved and re-run');
    rmSync(outside, { force: true });
    const second = await runTask('eb-always', () => 'Deny');
    assert.deepEqual(second.asked, [], 'not asked again');
    assert.equal(second.exitCode, 0);
    assert.equal(attempts(), 3, 'one more attempt: it started once, unsandboxed');
    assert.equal(existsSync(outside), true);
  });
});
