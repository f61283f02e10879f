// Reload survival of what runs without a person's terminal of its own: a background process a
// language model started (issue 22 item 4) and an `execBridge` task (issue 24 item 8). Called from
// the reload stage (reload.ui.ts) in its window, after its own case: a real "Developer: Reload
// Window" in the real workbench. Before it, the model's process has printed a line the model read
// and the task runs; after it, the model reads by the same id only what came after, and the task is
// back as one of our terminals, still running, saying what it is.
//
// The browser cannot call vscode.lm.invokeTool: the test-only extension (test/vscode/fake-model)
// does, from a file this stage writes (its command "Exec Bridge Test: Invoke Tool From File").
import type { Page } from 'playwright-core';
import { notificationItem, runPaletteCommand, waitForTerminalText } from './page';

export interface AgentReloadContext {
  page: Page;
  log: (...args: unknown[]) => void;
  shot: (name: string) => Promise<void>;
  workspace: string;
  /** Whether this workbench shows notification toasts (not with the smoke-test driver on). */
  toasts: boolean;
}

const TASK = 'eb-reload-task';

/** Calls a language-model tool through the test extension; resolves with its answer (or throws its error). */
async function callTool(page: Page, workspace: string, name: string, input: object): Promise<string> {
  const call = name === '' ? { ...input } : { name, input };
  const { existsSync, readFileSync, rmSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const id = `${Date.now()}-${Math.random()}`;
  const resultFile = join(workspace, '.eb-tool-result.json');
  rmSync(resultFile, { force: true });
  writeFileSync(join(workspace, '.eb-tool-call.json'), JSON.stringify({ id, ...call }));
  await runPaletteCommand(page, 'Exec Bridge Test: Invoke Tool From File');
  const deadline = Date.now() + 60_000;
  let unreadable: unknown;
  for (;;) {
    if (existsSync(resultFile)) {
      // Written whole by a rename; a file that does not parse is still reported if it stays so.
      let r: { id: string; text?: string; error?: string } | undefined;
      try {
        r = JSON.parse(readFileSync(resultFile, 'utf8')) as { id: string; text?: string; error?: string };
      } catch (e) {
        unreadable = e;
      }
      if (r?.id === id) {
        if (r.error !== undefined) throw new Error(`${name} failed: ${r.error}`);
        return r.text ?? '';
      }
    }
    if (Date.now() > deadline)
      throw new Error(`no answer from ${name} within 60 s${unreadable ? ` (the answer file: ${String(unreadable)})` : ''}`);
    await page.waitForTimeout(100);
  }
}

/** Shows the terminal whose tab title contains `title`, repeating the click (bounded) until its text matches `shows`. */
async function showTerminal(page: Page, title: string, shows: RegExp): Promise<string> {
  const tab = page.locator('.tabs-list .monaco-list-row', { hasText: title }).first();
  await tab.waitFor({ timeout: 60_000 });
  for (let attempt = 1; ; attempt++) {
    await tab.click();
    try {
      return await waitForTerminalText(page, shows, attempt < 5 ? 3_000 : 30_000, true);
    } catch (e) {
      if (attempt >= 5) throw e;
    }
  }
}

export async function agentWorkSurvivesReload(ctx: AgentReloadContext): Promise<void> {
  try {
    await agentAndTask(ctx);
  } catch (e) {
    await ctx.shot('agent-reload-failed');
    throw e;
  }
}

async function agentAndTask({ page, log, shot, workspace, toasts }: AgentReloadContext): Promise<void> {
  const { mkdirSync, rmSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const gate = join(workspace, 'agent-reload.gate');
  const taskGate = join(workspace, 'task-reload.gate');
  rmSync(gate, { force: true });
  rmSync(taskGate, { force: true });
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  // A task that runs through the reload: a line now, another once its gate appears (after the reload).
  writeFileSync(
    join(workspace, '.vscode', 'tasks.json'),
    JSON.stringify({
      version: '2.0.0',
      tasks: [
        {
          label: TASK,
          type: 'execBridge',
          command: `echo task-begun; while [ ! -e '${taskGate}' ]; do sleep 0.2; done; echo task-after-reload; sleep 60`,
          problemMatcher: [],
        },
      ],
    }),
  );

  // A model's command the sandbox blocks: the approval notification, as for the user's own; Deny is told to the model.
  const outside = `/root/eb-agent-denied-${Date.now()}`;
  const denied = callTool(page, workspace, 'execBridge_runCommand', { command: `echo "building…"; touch ${outside}` });
  // Awaited below; a step before that which fails must not leave it to reject unhandled (that ended
  // the whole harness, with its code-server left running).
  denied.catch(() => undefined);
  await waitForTerminalText(page, /blocked this command/, 60_000, true);
  const notification = await notificationItem(page, ':has-text("blocked")', toasts, 15_000);
  await page
    .locator('.quick-input-widget')
    .waitFor({ state: 'hidden', timeout: 5_000 })
    .catch(() => undefined);
  await shot('agent-sandbox-denial');
  await notification.locator('.monaco-button', { hasText: 'Deny' }).click();
  const answer = await denied;
  if (!/The user refused to run it without the sandbox/.test(answer)) throw new Error(`the model was not told of the refusal:\n${answer}`);
  log("a sandbox denial of a model's command raised the notification; Deny reached the model");

  // The model's background process: a line now, another once the gate appears (after the reload).
  const started = await callTool(page, workspace, 'execBridge_startBackground', {
    command: `echo agent-before; while [ ! -e '${gate}' ]; do sleep 0.2; done; echo agent-after; sleep 120`,
    waitSeconds: 1,
  });
  const id = /as "(bg-[0-9a-f]+)"/.exec(started)?.[1];
  if (!id || !/agent-before/.test(started)) throw new Error(`the background start did not answer as expected:\n${started}`);
  log(`background process ${id} started`);

  // The task, run through VS Code's task system by the test extension (tasks.json may not be read yet: again, bounded).
  for (let attempt = 1; ; attempt++) {
    try {
      await callTool(page, workspace, '', { task: TASK });
      break;
    } catch (e) {
      if (attempt >= 10) throw e;
      await page.waitForTimeout(500);
    }
  }
  await waitForTerminalText(page, /^task-begun$/m, 30_000, true);
  await shot('agent-and-task-before-reload');

  await runPaletteCommand(page, 'Developer: Reload Window');
  await page.waitForEvent('framenavigated', { timeout: 60_000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 120_000 });

  // The task: back as one of our terminals, still running (its gate opens now), saying it was a task.
  await showTerminal(page, `task ${TASK}`, /This is the task "eb-reload-task"[\s\S]*^task-begun$/m);
  writeFileSync(taskGate, '');
  await waitForTerminalText(page, /^task-after-reload$/m, 30_000, true);
  log('the task came back as a terminal and goes on');
  await shot('task-after-reload');

  // The model's process: the same id reads only what came after its last read.
  writeFileSync(gate, '');
  let read = '';
  for (let i = 0; i < 20 && !/agent-after/.test(read); i++)
    read += await callTool(page, workspace, 'execBridge_readBackground', { id, waitSeconds: 1 });
  if (!/agent-after/.test(read)) throw new Error(`after the reload ${id} never read its new output:\n${read}`);
  if (/agent-before/.test(read)) throw new Error(`after the reload ${id} gave again what was read before it:\n${read}`);
  const shown = await showTerminal(page, 'agent: echo agent-before', /agent-after/);
  if (!/reopened after the window reload/.test(shown)) throw new Error(`the agent's terminal has no reopen notice:\n${shown}`);
  const stopped = await callTool(page, workspace, 'execBridge_stopBackground', { id });
  if (!/^Stopped "/.test(stopped)) throw new Error(`stop did not stop:\n${stopped}`);
  log(`${id} read on after the reload and was stopped`);
  await shot('agent-after-reload');
  // What VS Code shows besides ours after the reload: it opens a local shell of its own when it has
  // no terminal to restore (its terminal.integrated.hideOnStartup "never"); logged, not ours to assert yet.
  const tabs = (await page.locator('.tabs-list .monaco-list-row').allTextContents()).map((t) => t.trim());
  log(`terminal tabs after the reload: ${JSON.stringify(tabs)}`);
}
