import type { Client } from '@modelcontextprotocol/client';
import type {
  ClientCapabilities,
  CreateMessageRequest,
  CreateMessageResult,
  ElicitRequestFormParams,
  ElicitRequestURLParams,
  ElicitResult,
  Root,
} from '@modelcontextprotocol/sdk/types.js';
import type { Event } from '../util';

/**
 * What our MCP client offers servers beyond the basics. Each part is optional: a part that is
 * absent is not announced in `initialize`, so a server never asks for what we cannot do.
 */
export interface McpClientFeatures {
  /** `roots`: the workspace folders as the executor sees them. */
  roots?: {
    /** The roots for a server running on `executorId`. */
    list(executorId: string): Root[];
    onDidChange: Event<void>;
  };
  /** `elicitation` (form mode): asks the user; a dismissed form is a decline. */
  elicit?(server: string, params: ElicitRequestFormParams, signal: AbortSignal): Promise<ElicitResult>;
  /** `elicitation` URL mode: shows the URL and opens it only if the user says so (accept = opened). */
  elicitUrl?(server: string, params: ElicitRequestURLParams, signal: AbortSignal): Promise<ElicitResult>;
  /** `sampling`: only where a language model is available and the user consents per request. */
  sample?(server: string, params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>;
  /** Whether `sample` can serve now (a language model exists); read when a session starts. Default yes. */
  canSample?(): boolean;
}

/**
 * Who made the request a server is serving when it asks the client something: VS Code's client
 * through the gateway answers elicitation and sampling for its own calls in its own UI. A part
 * that is absent falls back to ours.
 */
export interface RequestOrigin {
  elicit?(params: ElicitRequestFormParams | ElicitRequestURLParams, signal: AbortSignal): Promise<ElicitResult>;
  /** Whether `elicit` takes URL mode too. */
  elicitUrl?: boolean;
  sample?(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>;
}

/** The capabilities announced in `initialize` for `features`. */
export function clientCapabilities(features: McpClientFeatures | undefined): ClientCapabilities {
  const caps: ClientCapabilities = {};
  if (features?.roots) caps.roots = { listChanged: true };
  if (features?.elicit) caps.elicitation = { form: {}, ...(features.elicitUrl ? { url: {} } : {}) };
  if (features?.sample && (features.canSample?.() ?? true)) caps.sampling = {};
  return caps;
}

/**
 * Installs the request handlers for the announced features on `sdk` (before connect), and keeps
 * the server's roots current. Returns a disposer for the roots subscription.
 *
 * The same handlers serve both eras: a 2025 server sends `elicitation/create`,
 * `sampling/createMessage` and `roots/list` as requests of its own; a 2026-07-28 server answers a
 * call with an `input_required` result, whose embedded requests the SDK passes to these handlers
 * before it sends the call again with the answers.
 */
export function installClientFeatures(
  sdk: Client,
  features: McpClientFeatures | undefined,
  announced: ClientCapabilities,
  server: string,
  executorId: string,
  log: (line: string) => void,
  origin: () => RequestOrigin | undefined = () => undefined,
): { dispose(): void } {
  if (!features) return { dispose: () => undefined };
  const { roots, elicit, elicitUrl } = features;
  const sample = announced.sampling ? features.sample : undefined;
  if (roots) sdk.setRequestHandler('roots/list', () => ({ roots: roots.list(executorId) }));
  if (elicit) {
    sdk.setRequestHandler('elicitation/create', async (req, extra) => {
      const params = req.params as ElicitRequestFormParams | ElicitRequestURLParams;
      const signal = extra.mcpReq.signal;
      const by = origin();
      if (params.mode === 'url') {
        if (!/^https?:\/\//i.test(params.url)) return { action: 'decline' };
        if (by?.elicit && by.elicitUrl) {
          log(`the server asks to open a URL (asked in VS Code's MCP client, which made the call): ${params.message}`);
          return by.elicit(params, signal);
        }
        if (!elicitUrl) return { action: 'decline' };
        log(`the server asks to open a URL: ${params.message}`);
        const result = await elicitUrl(server, params, signal);
        log(`URL request answered: ${result.action}`);
        return result;
      }
      const form = params;
      log(`the server asks for input${by?.elicit ? " (asked in VS Code's MCP client, which made the call)" : ''}: ${params.message}`);
      const result = by?.elicit ? await by.elicit(form, signal) : await elicit(server, form, signal);
      log(`input request answered: ${result.action}`);
      return result;
    });
  }
  if (sample) {
    sdk.setRequestHandler('sampling/createMessage', async (req, extra) => {
      const params = req.params as CreateMessageRequest['params'];
      const signal = extra.mcpReq.signal;
      const by = origin();
      if (by?.sample) {
        log("the server asks for a language model completion (sampling), asked of VS Code's MCP client, which made the call");
        return by.sample(params, signal);
      }
      log('the server asks for a language model completion (sampling)');
      return sample(server, params, signal);
    });
  }
  if (!roots) return { dispose: () => undefined };
  const sub = roots.onDidChange(() => {
    if (sdk.transport) void sdk.sendRootsListChanged().catch(() => undefined);
  });
  return sub;
}

/** A sampling request's messages as plain text turns (what a chat model API takes); non-text parts are named. */
export function samplingTurns(params: CreateMessageRequest['params']): { role: 'user' | 'assistant'; text: string }[] {
  const turns: { role: 'user' | 'assistant'; text: string }[] = [];
  if (params.systemPrompt) turns.push({ role: 'user', text: params.systemPrompt });
  for (const m of params.messages) {
    const parts = Array.isArray(m.content) ? m.content : [m.content];
    const text = parts.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('\n');
    turns.push({ role: m.role, text });
  }
  return turns;
}

/**
 * The model for a sampling request: the first of the server's `modelPreferences.hints` (in order)
 * that is a substring of a model's name, id or family wins; without a match, the first model.
 */
export function pickModel<M extends { name: string; id: string; family: string }>(
  models: readonly M[],
  hints: readonly { name?: string }[] | undefined,
): M | undefined {
  for (const hint of hints ?? []) {
    const h = hint.name?.toLowerCase();
    if (!h) continue;
    const match = models.find((m) => [m.name, m.id, m.family].some((v) => v.toLowerCase().includes(h)));
    if (match) return match;
  }
  return models[0];
}

/** One field of an elicitation form, in a shape the UI can ask for one at a time. */
export interface ElicitField {
  key: string;
  title: string;
  description?: string;
  /** `multi`: an array of enum values (several may be picked). */
  kind: 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'multi';
  required: boolean;
  options?: { value: string; label: string }[];
  default?: string | number | boolean | string[];
  /** string: a format such as `email` or `uri`, shown as a hint. */
  format?: string;
  minimum?: number;
  maximum?: number;
  /** string: length bounds; multi: how many may be picked. */
  minLength?: number;
  maxLength?: number;
}

/** The fields of a form elicitation's `requestedSchema`, in declaration order. */
export function elicitFields(params: ElicitRequestFormParams): ElicitField[] {
  const required = new Set(params.requestedSchema.required ?? []);
  const fields: ElicitField[] = [];
  for (const [key, raw] of Object.entries(params.requestedSchema.properties)) {
    const p = raw as Record<string, unknown>;
    const title = typeof p['title'] === 'string' ? p['title'] : key;
    const field: ElicitField = { key, title, kind: 'string', required: required.has(key) };
    if (typeof p['description'] === 'string') field.description = p['description'];
    const enumValues = Array.isArray(p['enum']) ? (p['enum'] as unknown[]).map(String) : undefined;
    const oneOf = Array.isArray(p['oneOf']) ? (p['oneOf'] as { const?: unknown; title?: unknown }[]) : undefined;
    const items =
      p['type'] === 'array' && typeof p['items'] === 'object' && p['items'] !== null ? (p['items'] as Record<string, unknown>) : undefined;
    if (items) {
      // Multi-select (2025-11-25): `items.enum` (untitled) or `items.anyOf` of {const, title}.
      field.kind = 'multi';
      const values = Array.isArray(items['enum']) ? (items['enum'] as unknown[]).map(String) : undefined;
      const anyOf = Array.isArray(items['anyOf']) ? (items['anyOf'] as { const?: unknown; title?: unknown }[]) : [];
      field.options = values
        ? values.map((v) => ({ value: v, label: v }))
        : anyOf.map((o) => ({ value: String(o.const), label: typeof o.title === 'string' ? o.title : String(o.const) }));
      if (Array.isArray(p['default'])) field.default = (p['default'] as unknown[]).map(String);
      if (typeof p['minItems'] === 'number') field.minLength = p['minItems'];
      if (typeof p['maxItems'] === 'number') field.maxLength = p['maxItems'];
    } else if (enumValues || oneOf) {
      field.kind = 'enum';
      const names = Array.isArray(p['enumNames']) ? (p['enumNames'] as unknown[]).map(String) : [];
      field.options = enumValues
        ? enumValues.map((v, i) => ({ value: v, label: names[i] ?? v }))
        : (oneOf ?? []).map((o) => ({ value: String(o.const), label: typeof o.title === 'string' ? o.title : String(o.const) }));
    } else if (p['type'] === 'number' || p['type'] === 'integer' || p['type'] === 'boolean') {
      field.kind = p['type'];
    }
    if (typeof p['default'] === 'string' || typeof p['default'] === 'number' || typeof p['default'] === 'boolean')
      field.default = p['default'];
    if (typeof p['format'] === 'string') field.format = p['format'];
    if (typeof p['minimum'] === 'number') field.minimum = p['minimum'];
    if (typeof p['maximum'] === 'number') field.maximum = p['maximum'];
    if (field.kind === 'string' && typeof p['minLength'] === 'number') field.minLength = p['minLength'];
    if (field.kind === 'string' && typeof p['maxLength'] === 'number') field.maxLength = p['maxLength'];
    fields.push(field);
  }
  return fields;
}

/** Converts what the user typed for `field`; a string is an error message. Empty optional input = undefined. */
export function parseElicitValue(field: ElicitField, text: string): string | number | boolean | undefined | { error: string } {
  const t = text.trim();
  if (t === '') return field.required ? { error: `${field.title} is required` } : undefined;
  switch (field.kind) {
    case 'boolean':
      if (/^(true|yes|y|1)$/i.test(t)) return true;
      if (/^(false|no|n|0)$/i.test(t)) return false;
      return { error: 'answer yes or no' };
    case 'number':
    case 'integer': {
      const n = Number(t);
      if (!Number.isFinite(n) || (field.kind === 'integer' && !Number.isInteger(n)))
        return { error: field.kind === 'integer' ? 'a whole number is needed' : 'a number is needed' };
      if (field.minimum !== undefined && n < field.minimum) return { error: `at least ${field.minimum}` };
      if (field.maximum !== undefined && n > field.maximum) return { error: `at most ${field.maximum}` };
      return n;
    }
    case 'enum':
      return field.options?.some((o) => o.value === t) ? t : { error: `one of ${field.options?.map((o) => o.value).join(', ')}` };
    default:
      if (field.minLength !== undefined && text.length < field.minLength) return { error: `at least ${field.minLength} characters` };
      if (field.maxLength !== undefined && text.length > field.maxLength) return { error: `at most ${field.maxLength} characters` };
      return text;
  }
}

/** Checks a multi-select answer against the field's bounds; a string is an error message. */
export function checkElicitPicks(field: ElicitField, picked: readonly string[]): string[] | { error: string } {
  if (field.required && picked.length === 0) return { error: `${field.title} is required` };
  // An optional field picked empty is left out of the answer: `minItems` bounds a value that is there.
  if (picked.length === 0) return [];
  if (field.minLength !== undefined && picked.length < field.minLength) return { error: `pick at least ${field.minLength}` };
  if (field.maxLength !== undefined && picked.length > field.maxLength) return { error: `pick at most ${field.maxLength}` };
  return [...picked];
}

/** One item of a single-choice field (enum, boolean); `leaveOut` answers nothing for an optional field. */
export interface ElicitChoice {
  label: string;
  value: string | boolean | undefined;
  leaveOut?: true;
}

/**
 * The items of an enum or boolean field, and which one Enter takes (`active`): the schema's
 * `default`, else for an optional field "leave out", else the first option. An optional field
 * always offers "leave out" (last), so it can be answered with nothing, as a text field left empty is.
 */
export function elicitChoices(field: ElicitField): { items: ElicitChoice[]; active: number } {
  const items: ElicitChoice[] =
    field.kind === 'boolean'
      ? [
          { label: 'Yes', value: true },
          { label: 'No', value: false },
        ]
      : (field.options ?? []).map((o) => ({ label: o.label, value: o.value }));
  if (!field.required) items.push({ label: '(leave out)', value: undefined, leaveOut: true });
  let active = items.findIndex((i) => !i.leaveOut && field.default !== undefined && i.value === field.default);
  if (active < 0) active = field.required ? 0 : items.length - 1;
  return { items, active };
}

/**
 * The URL elicitations a failed request needs first (error -32042, "URL elicitation required",
 * 2025-11-25): only well-formed http(s) ones; undefined for any other error.
 */
export function requiredUrlElicitations(error: unknown): ElicitRequestURLParams[] | undefined {
  if (typeof error !== 'object' || error === null || (error as { code?: unknown }).code !== -32042) return undefined;
  const list = (error as { data?: { elicitations?: unknown } }).data?.elicitations;
  if (!Array.isArray(list)) return undefined;
  const ok = list.filter(
    (e): e is ElicitRequestURLParams =>
      typeof e === 'object' &&
      e !== null &&
      typeof (e as { url?: unknown }).url === 'string' &&
      /^https?:\/\//i.test((e as { url: string }).url) &&
      typeof (e as { message?: unknown }).message === 'string',
  );
  return ok.length > 0 ? ok : undefined;
}

/** A progress notification as a VS Code progress step: its message, and the increment (of 100) when it has a total. */
export function progressStep(
  p: { progress: number; total?: number; message?: string },
  percentSoFar: number,
): { message: string; increment?: number } {
  const count = p.total ? `${p.progress}/${p.total}` : `${p.progress}`;
  const step: { message: string; increment?: number } = { message: p.message ? `${p.message} (${count})` : count };
  if (p.total && p.total > 0) step.increment = Math.max(0, Math.min(100, (p.progress / p.total) * 100) - percentSoFar);
  return step;
}

/** A workspace folder as VS Code has it: `file` (this machine) or `execbridge://EXECUTOR/path` (an executor's). */
export interface FolderLike {
  scheme: string;
  authority: string;
  path: string;
  name: string;
}

/**
 * The roots a server on `executorId` gets: its executor's folders (`execbridge://` folders of that
 * executor) and the local `file` folders (the same paths, as a server on this machine sees them).
 */
export function rootsFor(folders: readonly FolderLike[], executorId: string, executorIsLocal: boolean): Root[] {
  const roots: Root[] = [];
  for (const f of folders) {
    if (f.scheme === 'execbridge' && decodeURIComponent(f.authority) === executorId) {
      roots.push({ uri: `file://${encodeURI(f.path)}`, name: f.name });
    } else if (f.scheme === 'file' && executorIsLocal) {
      roots.push({ uri: `file://${encodeURI(f.path)}`, name: f.name });
    }
  }
  return roots;
}
