import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import { getApi, isAlive, waitFor, withSettings } from './helpers';

// `execBridge` tasks from tasks.json, run on the bundled executor through VS Code's task system.
const TSC_LINE = "src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.";

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
  // VS Code re-reads tasks.json when it changes on disk: ask until our entry is there (bounded).
  for (let i = 0; i < 80 && !found; i++) {
    found = (await vscode.tasks.fetchTasks({ type: 'execBridge' })).find((t) => t.name === name);
    if (!found) await new Promise((r) => setTimeout(r, 250));
  }
  assert.ok(found, `task ${name} is not in tasks.json`);
  return found;
}

suite('tasks', () => {
  let folder: string;
  let restore: () => Promise<void>;
  const started: string[] = [];
  let startSub: vscode.Disposable;

  suiteSetup(async () => {
    restore = await withSettings({ sandbox: 'full-access', sandboxNetwork: true });
    await (await getApi()).connect('bundled');
    folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    mkdirSync(join(folder, '.vscode'), { recursive: true });
    rmSync(join(folder, 'chain-after.marker'), { force: true });
    rmSync(join(folder, 'chain-ok.marker'), { force: true });
    rmSync(join(folder, 'after-watch.marker'), { force: true });
    rmSync(join(folder, 'watch.pid'), { force: true });
    startSub = vscode.tasks.onDidStartTask((e) => started.push(e.execution.task.name));
    const tasks = {
      version: '2.0.0',
      tasks: [
        // The error line is the very last output before the exit (microsoft/vscode#92868).
        {
          label: 'eb-tsc',
          type: 'execBridge',
          command: `echo building; printf '%s\\n' "${TSC_LINE.replace(/'/g, "'\\''")}"; exit 2`,
          problemMatcher: '$tsc',
        },
        { label: 'eb-fail', type: 'execBridge', command: 'echo failing; exit 1', problemMatcher: [] },
        { label: 'eb-chain', type: 'execBridge', command: 'touch chain-after.marker', dependsOn: ['eb-fail'], problemMatcher: [] },
        {
          label: 'eb-ok',
          type: 'execBridge',
          args: ['/bin/sh', '-c', 'echo "cwd=$(pwd) v=$V"'],
          env: { V: '${workspaceFolderBasename}' },
          problemMatcher: [],
        },
        { label: 'eb-chain-ok', type: 'execBridge', command: 'touch chain-ok.marker', dependsOn: ['eb-ok'], problemMatcher: [] },
        // A watcher: prints a compile round between begin/end markers (a problem in it), then keeps
        // running; its pid and its child's go to a file. The dependent starts once the round ended.
        {
          label: 'eb-watch',
          type: 'execBridge',
          command: `echo $$ > watch.pid; sleep 600 & echo $! >> watch.pid; echo 'watch: round begins'; printf '%s\\n' 'src/watched.ts(2,5): error W1: watched problem'; echo 'watch: round ends'; wait`,
          isBackground: true,
          problemMatcher: {
            owner: 'eb-watch',
            source: 'eb-watch',
            fileLocation: ['relative', '${workspaceFolder}'],
            pattern: { regexp: '^(.*)\\((\\d+),(\\d+)\\): error (\\w+): (.*)$', file: 1, line: 2, column: 3, code: 4, message: 5 },
            background: { activeBegin: true, beginsPattern: '^watch: round begins', endsPattern: '^watch: round ends' },
          },
        },
        { label: 'eb-after-watch', type: 'execBridge', command: 'touch after-watch.marker', dependsOn: ['eb-watch'], problemMatcher: [] },
        {
          label: 'eb-denied',
          type: 'execBridge',
          command: 'touch ~/eb-task-denied.marker',
          sandbox: 'workspace-write',
          problemMatcher: [],
        },
      ],
    };
    writeFileSync(join(folder, '.vscode', 'tasks.json'), JSON.stringify(tasks, null, 2));
  });
  suiteTeardown(async () => {
    startSub?.dispose();
    rmSync(join(folder, '.vscode', 'tasks.json'), { force: true });
    for (const m of ['chain-after.marker', 'chain-ok.marker', 'after-watch.marker', 'watch.pid']) rmSync(join(folder, m), { force: true });
    await restore();
  });

  test('a tasks.json task runs on the executor: its exit code is the task’s, its tsc line a diagnostic', async () => {
    const t = await task('eb-tsc');
    const ended = endOf('eb-tsc');
    await vscode.tasks.executeTask(t);
    assert.equal(await ended, 2);
    const file = vscode.Uri.file(join(folder, 'src', 'app.ts'));
    const diag = await waitFor(
      'the TS2322 diagnostic',
      () => vscode.languages.getDiagnostics(file).find((d) => d.message.includes('not assignable')),
      10_000,
    );
    assert.equal(diag.range.start.line, 2);
    assert.equal(diag.range.start.character, 6);
    assert.equal(diag.severity, vscode.DiagnosticSeverity.Error);
  });

  test('a failing task stops its dependsOn chain; a succeeding one lets it go on', async () => {
    const failed = endOf('eb-fail');
    await vscode.tasks.executeTask(await task('eb-chain'));
    assert.equal(await failed, 1);
    // The dependent would start right after the failure: run a task of our own and, once it
    // ended, see that the dependent never started. (Siblings in a `dependsOrder: sequence` list
    // still run after a failure: that is VS Code's rule for every task type.)
    const okEnded = endOf('eb-chain-ok');
    await vscode.tasks.executeTask(await task('eb-chain-ok'));
    assert.equal(await okEnded, 0);
    assert.equal(existsSync(join(folder, 'chain-ok.marker')), true, 'the chain after a succeeding task ran');
    assert.ok(started.includes('eb-ok'), 'eb-ok ran first, as its dependent');
    assert.ok(!started.includes('eb-chain'), `eb-chain must not start after eb-fail failed (started: ${started.join(', ')})`);
    assert.equal(existsSync(join(folder, 'chain-after.marker')), false);
  });

  test('a background watcher: its dependent starts at endsPattern while it runs, its problems show, Terminate kills it', async () => {
    const afterEnded = endOf('eb-after-watch');
    const watchEnded = endOf('eb-watch', 60_000);
    await vscode.tasks.executeTask(await task('eb-after-watch'));
    // The dependent ran to its end: VS Code saw the round end, not the watcher's exit.
    assert.equal(await afterEnded, 0);
    assert.equal(existsSync(join(folder, 'after-watch.marker')), true, 'the dependent task ran');
    const watcher = vscode.tasks.taskExecutions.find((e) => e.task.name === 'eb-watch');
    assert.ok(watcher, 'the watcher is still running');
    const pids = readFileSync(join(folder, 'watch.pid'), 'utf8').trim().split('\n').map(Number);
    assert.equal(pids.length, 2);
    assert.ok(pids.every(isAlive), 'the watcher and its child run on the executor');
    const file = vscode.Uri.file(join(folder, 'src', 'watched.ts'));
    const diag = await waitFor(
      "the watcher's problem",
      () => vscode.languages.getDiagnostics(file).find((d) => d.message.includes('watched problem')),
      10_000,
    );
    assert.equal(diag.range.start.line, 1);
    assert.equal(diag.source, 'eb-watch');
    // Terminate Task: the process and its child end on the executor.
    watcher.terminate();
    await watchEnded;
    await waitFor('the watcher processes to end', () => !pids.some(isAlive), 10_000);
    assert.equal(
      vscode.tasks.taskExecutions.some((e) => e.task.name === 'eb-watch'),
      false,
    );
  });

  test('a sandbox denial in a task asks for approval like a terminal command', async () => {
    const api = await getApi();
    const restoreSandbox = await withSettings({ sandbox: 'workspace-write', sandboxNetwork: false });
    const asked: string[] = [];
    const sub = api.onDidRequestApproval((p) => {
      asked.push(p.commandLine);
      p.respond('Run Without Sandbox');
    });
    const marker = join(process.env['HOME'] ?? '/nonexistent', 'eb-task-denied.marker');
    rmSync(marker, { force: true });
    try {
      const ended = endOf('eb-denied');
      await vscode.tasks.executeTask(await task('eb-denied'));
      assert.equal(await ended, 0);
      assert.deepEqual(asked, ['touch ~/eb-task-denied.marker']);
      assert.equal(existsSync(marker), true, 'the approved run wrote outside the workspace');
    } finally {
      sub.dispose();
      rmSync(marker, { force: true });
      await restoreSandbox();
    }
  });
});
