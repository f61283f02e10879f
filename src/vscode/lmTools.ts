import { posix } from 'node:path';
import * as vscode from 'vscode';
import {
  backgroundInput,
  inputText,
  readInput,
  runInput,
  stopInput,
  writeInput,
  AGENT_TOOL_NAMES,
  AgentTools,
  commandSketch,
  describeExecutor,
  stateText,
  sandboxLabel,
  sandboxRequest,
} from '../core';
import type { ToolInput, OpenedRun, SessionMemory } from '../core';
import { errorMessage } from '../util';
import type { FeatureContext } from './context';
import { currentSandboxSettings } from './listSettings';
import type { RunTerminal, TerminalFeature } from './terminals';

/**
 * The language-model tools (issue 22): thin — the logic, the bounds and the words for the model are
 * core/agentTools.ts (the model's input read by core/agentToolInput.ts); this file opens each run in
 * one of our terminals (TerminalFeature.openAgentRun, built through core/executorRun.ts like every
 * run) and maps VS Code's tool API onto it. Declared in package.json
 * `contributes.languageModelTools` (names, descriptions and schemas for the model).
 */
export function registerLmTools(ext: FeatureContext, terminals: TerminalFeature, memory: SessionMemory): AgentTools | undefined {
  const lm = vscode.lm as Partial<typeof vscode.lm>;
  if (typeof lm.registerTool !== 'function') {
    ext.log.info(`VS Code ${vscode.version} has no vscode.lm.registerTool: the language-model tools are not offered`);
    return undefined;
  }
  const tools = agentTools(ext, terminals, memory);
  ext.disposables.add({ dispose: () => tools.dispose() });
  // After a reload: a background process of a model is known again by its id, its reads go on.
  ext.disposables.add(
    terminals.onDidReopenTerminal((t) => {
      const agent = t.run.spec.agent;
      if (agent?.backgroundId) tools.adopt(agent.backgroundId, opened(t, t.run.spec.cwd), agent.readSeq ?? 0);
    }),
  );
  registerAgentTools(ext, tools);
  return tools;
}

const opened = (t: RunTerminal, cwd: string): OpenedRun => ({ run: t.run, executor: t.executor, cwd, terminalName: t.terminal.name });

/** The tools' logic over this window: its executors, its terminals, its run list and what it remembers for a reload. */
function agentTools(ext: FeatureContext, terminals: TerminalFeature, memory: SessionMemory): AgentTools {
  return new AgentTools({
    open: async (request) => {
      if (!vscode.workspace.isTrusted)
        throw new Error('Exec Bridge runs commands only in a trusted workspace; the user has not trusted it.');
      const conn = ext.connection(request.executor);
      try {
        await conn.connect();
      } catch (e) {
        throw new Error(`Could not connect to the executor ${conn.name}: ${errorMessage(e)}`);
      }
      const base = conn.defaultCwd();
      const cwd = request.cwd ? posix.resolve(base, request.cwd) : base;
      const t = terminals.openAgentRun(conn, request.commandLine, cwd, request.backgroundId ? { backgroundId: request.backgroundId } : {});
      return opened(t, cwd);
    },
    executors: () =>
      ext.executors.all().map((c) => ({
        name: c.name,
        active: c === ext.executors.active,
        state: stateText(c.state, c.name).label,
        description: describeExecutor(c.config),
        ...(c.state.kind === 'connected' ? { cwd: c.defaultCwd() } : {}),
      })),
    registry: ext.runs,
    rememberRead: (executor, processId, seq) => ext.executors.get(executor)?.rememberAgentRead(processId, seq),
    // An id from before a window reload: its executor's session is resumed (which reopens its terminal).
    restore: async (id) => {
      const found = memory.findAgentProcess(id);
      const conn = found && ext.executors.get(found.executor);
      if (conn && vscode.workspace.isTrusted) await conn.connect().catch(() => undefined);
    },
  });
}

/** The six tools, each its input read by core/agentToolInput.ts and its answer one text part. */
function registerAgentTools(ext: FeatureContext, tools: AgentTools): void {
  const answer = (text: string) => new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(text)]);
  const where = (input: ToolInput) => inputText(input['executor']) ?? ext.executors.active.name;
  const idOf = (input: ToolInput) => inputText(input['id']) ?? 'a background process';
  registerTool(ext, AGENT_TOOL_NAMES.run, {
    prepareInvocation: (o) => prepareRun(o.input, where(o.input), false),
    invoke: async (o, token) => answer(await tools.runCommand(runInput(o.input), signalOf(token))),
  });
  registerTool(ext, AGENT_TOOL_NAMES.startBackground, {
    prepareInvocation: (o) => prepareRun(o.input, where(o.input), true),
    invoke: async (o, token) => answer(await tools.startBackground(backgroundInput(o.input), signalOf(token))),
  });
  registerTool(ext, AGENT_TOOL_NAMES.readBackground, {
    prepareInvocation: (o) => ({ invocationMessage: `Reading the output of ${idOf(o.input)}` }),
    invoke: async (o, token) => answer(await tools.readBackground(readInput(o.input), signalOf(token))),
  });
  registerTool(ext, AGENT_TOOL_NAMES.writeBackground, {
    prepareInvocation: (o) => ({
      invocationMessage: new vscode.MarkdownString(`Typing \`${commandSketch(String(o.input['text'] ?? ''), 80)}\` into ${idOf(o.input)}`),
    }),
    invoke: async (o) => answer(await tools.writeBackground(writeInput(o.input))),
  });
  registerTool(ext, AGENT_TOOL_NAMES.stopBackground, {
    prepareInvocation: (o) => ({ invocationMessage: `Stopping ${idOf(o.input)}` }),
    invoke: async (o) => answer(await tools.stopBackground(stopInput(o.input))),
  });
  registerTool(ext, AGENT_TOOL_NAMES.listExecutors, {
    prepareInvocation: () => ({ invocationMessage: 'Listing the executors' }),
    invoke: () => answer(tools.listExecutors()),
  });
}

/** Registers one tool; the log says when it asks the user to confirm, each call, and each failure. */
function registerTool(ext: FeatureContext, name: string, tool: vscode.LanguageModelTool<ToolInput>): void {
  ext.disposables.add(
    vscode.lm.registerTool<ToolInput>(name, {
      ...tool,
      prepareInvocation: async (o, token) => {
        const prepared = await tool.prepareInvocation?.(o, token);
        const ask = prepared?.confirmationMessages;
        // VS Code shows it (the chat's Continue/Cancel, or a dialog outside a chat); the log says it was asked.
        if (ask)
          ext.log.info(
            `language-model tool ${name} asks the user to confirm: ${ask.title} ${typeof ask.message === 'string' ? ask.message : ask.message.value}`,
          );
        return prepared;
      },
      invoke: async (o, token) => {
        ext.log.info(`language-model tool ${name}: ${JSON.stringify(o.input).slice(0, 200)}`);
        try {
          return await tool.invoke(o, token);
        } catch (e) {
          ext.log.info(`language-model tool ${name} failed: ${errorMessage(e)}`);
          throw e;
        }
      },
    }),
  );
}

/**
 * What the chat shows before a run: the command, the executor and the sandbox. A sandboxed run
 * needs no confirmation here (the sandbox holds it; a denial, or `askBeforeRun`, asks through our
 * notification, as for the user's own commands); a run the settings leave unsandboxed is confirmed.
 */
function prepareRun(input: ToolInput, executor: string, background: boolean): vscode.PreparedToolInvocation {
  const settings = currentSandboxSettings();
  const sandboxed = sandboxRequest(settings, '/') !== undefined;
  const command = commandSketch(String(input['command'] ?? ''));
  const cwd = inputText(input['cwd']);
  const sandbox = sandboxed ? `sandbox: ${sandboxLabel(settings)}` : 'no sandbox';
  const what = `\`${command}\` on **${executor}**${cwd ? ` in \`${cwd}\`` : ''} (${sandbox})`;
  return {
    invocationMessage: new vscode.MarkdownString(`${background ? 'Starting in the background' : 'Running'} ${what}`),
    ...(sandboxed
      ? {}
      : {
          confirmationMessages: {
            title: 'Run without a sandbox?',
            message: new vscode.MarkdownString(
              `Run ${what}? The workspace's setting \`execBridge.sandbox\` is full-access with the network on, so this command runs without the sandbox.`,
            ),
          },
        }),
  };
}

function signalOf(token: vscode.CancellationToken): AbortSignal {
  const c = new AbortController();
  if (token.isCancellationRequested) c.abort();
  else token.onCancellationRequested(() => c.abort());
  return c.signal;
}
