import { createHash } from 'node:crypto';
import { oauthStrings } from './auth';
import type { McpSandboxChoice, McpSandboxSettings } from './sandbox';
import {
  DEFAULT_STARTUP_TIMEOUT_MS,
  keyIn,
  VARIABLE,
  type McpConfig,
  type McpConfigLayer,
  type McpConfigSource,
  type McpDiagnostic,
  type McpInputDefinition,
  type McpServerDefinition,
  type McpServerEntry,
  type ServerFields,
} from './types';

/**
 * Merges sources in order into one configuration. `mcp.json` servers come first; a later
 * `mcp.json` with a name already taken is reported and skipped; settings entries replace (with a
 * `command`) or adjust (without) the server of the same name.
 */
export function mergeMcpConfig(layers: McpConfigLayer[], options: { sandboxDefault?: McpSandboxSettings | 'none' } = {}): McpConfig {
  const diagnostics: McpDiagnostic[] = layers.flatMap((l) => l.diagnostics);
  const inputs = mergeInputs(layers, diagnostics);
  const slots = mergeServers(layers, diagnostics);
  const entries = [...slots.values()].map((slot) => toEntry(slot, inputs, diagnostics, options.sandboxDefault));
  return { entries, inputs, diagnostics };
}

/** The first declaration of an input id wins; later ones are reported. */
function mergeInputs(layers: readonly McpConfigLayer[], diagnostics: McpDiagnostic[]): McpInputDefinition[] {
  const inputs: McpInputDefinition[] = [];
  for (const l of layers) {
    for (const input of l.inputs) {
      if (inputs.some((x) => x.id === input.id)) {
        diagnostics.push({
          severity: 'warning',
          file: l.source.file,
          key: 'inputs',
          message: `input "${input.id}" is also declared in ${inputs.find((x) => x.id === input.id)?.source.file}; that one is used`,
        });
      } else inputs.push(input);
    }
  }
  return inputs;
}

/** One server name's merged fields, before validation. */
interface Slot {
  name: string;
  source: McpConfigSource;
  adjustedBy?: McpConfigSource;
  fields: Partial<ServerFields>;
  errors: McpDiagnostic[];
}

/** A settings entry with a `command` (stdio) or a `url` (http/sse) is a server of its own, not an adjustment. */
function definesServer(s: { present: Set<string> }): boolean {
  return s.present.has('command') || s.present.has('url');
}

/** Server names in source order, each with its fields after every layer's say. */
function mergeServers(layers: readonly McpConfigLayer[], diagnostics: McpDiagnostic[]): Map<string, Slot> {
  const slots = new Map<string, Slot>();
  for (const l of layers) {
    for (const s of l.servers) {
      const existing = slots.get(s.name);
      if (l.source.kind === 'mcpJson') {
        if (existing) {
          diagnostics.push({
            severity: 'warning',
            file: l.source.file,
            server: s.name,
            message: `server "${s.name}" is already defined in ${existing.source.file}; this definition is ignored`,
          });
          continue;
        }
        slots.set(s.name, { name: s.name, source: l.source, fields: { ...s.fields }, errors: [...s.errors] });
      } else if (definesServer(s) || !existing) {
        if (!definesServer(s) && s.errors.length === 0) {
          const d: McpDiagnostic = {
            severity: 'error',
            file: l.source.file,
            server: s.name,
            key: 'command',
            message: `no "command", and no server named "${s.name}" in .vscode/mcp.json to adjust; add a "command" or fix the name`,
          };
          s.errors.push(d);
          diagnostics.push(d);
        }
        slots.set(s.name, { name: s.name, source: l.source, fields: { ...s.fields }, errors: [...s.errors] });
      } else {
        existing.adjustedBy = l.source;
        Object.assign(existing.fields, s.fields);
        existing.errors.push(...s.errors);
      }
    }
  }
  return slots;
}

/** Validates a merged server (a command, declared inputs) and builds its definition when valid. */
function toEntry(
  slot: Slot,
  inputs: readonly McpInputDefinition[],
  diagnostics: McpDiagnostic[],
  sandboxDefault: McpSandboxSettings | 'none' | undefined,
): McpServerEntry {
  const f = slot.fields;
  if (f.command === undefined && f.transport === undefined && slot.errors.length === 0) {
    const d: McpDiagnostic = {
      severity: 'error',
      file: slot.source.file,
      server: slot.name,
      key: keyIn(slot.source, slot.name, 'command'),
      message: '"command" is required for a stdio server',
    };
    slot.errors.push(d);
    diagnostics.push(d);
  }
  for (const [key, value] of allVariableStrings(f)) {
    for (const m of value.matchAll(VARIABLE)) {
      if (m[1] === 'input' && m[2] && !inputs.some((x) => x.id === m[2])) {
        const d: McpDiagnostic = {
          severity: 'error',
          file: slot.source.file,
          server: slot.name,
          key: keyIn(slot.source, slot.name, key),
          message: `\${input:${m[2]}} refers to an input that no "inputs" entry declares`,
        };
        slot.errors.push(d);
        diagnostics.push(d);
      }
    }
  }
  const entry: McpServerEntry = { name: slot.name, source: slot.source, errors: slot.errors };
  const remote =
    f.transport !== undefined && f.url !== undefined
      ? {
          type: f.transport,
          url: f.url,
          headers: f.headers ?? {},
          ...(f.oauth ? { oauth: f.oauth } : {}),
          connectFrom: f.connectFrom ?? 'window',
        }
      : undefined;
  checkConnectFrom(slot, remote !== undefined || f.transport !== undefined, diagnostics);
  if (slot.errors.length === 0 && (f.command !== undefined || remote)) {
    const def: Omit<McpServerDefinition, 'fingerprint'> = {
      name: slot.name,
      source: slot.source,
      ...(slot.adjustedBy ? { adjustedBy: slot.adjustedBy } : {}),
      command: f.command ?? '',
      args: f.args ?? [],
      ...(remote ? { remote } : {}),
      env: f.env ?? {},
      ...(f.envFile !== undefined ? { envFile: f.envFile } : {}),
      ...(f.cwd !== undefined ? { cwd: f.cwd } : {}),
      ...(f.executor !== undefined ? { executor: f.executor } : {}),
      startupTimeoutMs: f.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
      autoStart: f.autoStart ?? false,
      restart: f.restart ?? 'never',
      ...(f.enabledTools !== undefined ? { enabledTools: f.enabledTools } : {}),
      disabledTools: f.disabledTools ?? [],
    };
    // The executor's sandbox: the server's own key, else the workspace default (stdio servers only).
    const sandbox: McpSandboxChoice | undefined = remote
      ? undefined
      : f.executorSandbox !== undefined
        ? { settings: f.executorSandbox, from: 'server' }
        : sandboxDefault !== undefined
          ? { settings: sandboxDefault, from: 'default' }
          : undefined;
    if (sandbox && sandbox.settings !== 'none') def.sandbox = sandbox;
    entry.definition = { ...def, fingerprint: fingerprintOf(def) };
  }
  return entry;
}

/**
 * `connectFrom` belongs to a remote server (a stdio one runs on the executor anyway); `executor` on
 * a remote server says which executor only when its requests go through one.
 */
function checkConnectFrom(slot: Slot, remote: boolean, diagnostics: McpDiagnostic[]): void {
  const f = slot.fields;
  const at = (key: string) => ({ file: slot.source.file, server: slot.name, key: keyIn(slot.source, slot.name, key) });
  if (!remote && f.connectFrom !== undefined) {
    const d: McpDiagnostic = {
      severity: 'error',
      ...at('connectFrom'),
      message: '"connectFrom" belongs to an "http" or "sse" server; a stdio server runs on the executor',
    };
    slot.errors.push(d);
    diagnostics.push(d);
  } else if (remote && f.executor !== undefined && f.connectFrom !== 'executor') {
    diagnostics.push({
      severity: 'warning',
      ...at('executor'),
      message:
        '"executor" has no effect on a remote server connected from the window; add "connectFrom": "executor" to reach it through that executor',
    });
  }
}

function* allVariableStrings(f: Partial<ServerFields>): Generator<[string, string]> {
  if (f.command !== undefined) yield ['command', f.command];
  for (const [i, a] of (f.args ?? []).entries()) yield [`args[${i}]`, a];
  for (const [k, v] of Object.entries(f.env ?? {})) if (v !== null) yield [`env.${k}`, v];
  if (f.envFile !== undefined) yield ['envFile', f.envFile];
  if (f.cwd !== undefined) yield ['cwd', f.cwd];
  if (f.url !== undefined) yield ['url', f.url];
  for (const [k, v] of Object.entries(f.headers ?? {})) yield [`headers.${k}`, v];
  if (f.executorSandbox !== undefined && f.executorSandbox !== 'none')
    for (const [i, w] of f.executorSandbox.writable.entries()) yield [`executorSandbox.writable[${i}]`, w];
  yield* oauthStrings(f.oauth);
}

/**
 * Hash of what the running process depends on. Tool filters and restart/autoStart policy are left
 * out: they apply without a restart.
 */
function fingerprintOf(def: Omit<McpServerDefinition, 'fingerprint'>): string {
  const material = {
    command: def.command,
    args: def.args,
    env: Object.entries(def.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    envFile: def.envFile ?? null,
    cwd: def.cwd ?? null,
    executor: def.executor ?? null,
    workspaceFolder: def.source.workspaceFolder ?? null,
    sandbox: def.sandbox?.settings ?? null,
    remote: def.remote
      ? { ...def.remote, headers: Object.entries(def.remote.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) }
      : null,
  };
  return createHash('sha256').update(JSON.stringify(material)).digest('hex').slice(0, 16);
}

/** Applies `enabledTools` then `disabledTools` (deny after allow, as Codex does). */
export function isToolEnabled(def: Pick<McpServerDefinition, 'enabledTools' | 'disabledTools'>, tool: string): boolean {
  if (def.enabledTools && !def.enabledTools.includes(tool)) return false;
  return !def.disabledTools.includes(tool);
}
