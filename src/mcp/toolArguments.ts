import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation/types.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage } from '../util';

let validator: AjvJsonSchemaValidator | undefined;

export type ParsedArguments = { ok: true; args: Record<string, unknown> } | { ok: false; message: string };

/**
 * Parses what a user typed for "Call Tool…" and validates it against the tool's input schema, so
 * a mistake is explained before anything is sent. Empty input means `{}`.
 */
export function parseToolArguments(tool: Pick<Tool, 'name' | 'inputSchema'>, text: string): ParsedArguments {
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `not valid JSON: ${errorMessage(e)}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, message: 'the arguments must be a JSON object, like {"name": "value"}' };
  validator ??= new AjvJsonSchemaValidator();
  let check: ReturnType<AjvJsonSchemaValidator['getValidator']>;
  try {
    check = validator.getValidator(tool.inputSchema as JsonSchemaType);
  } catch {
    // A schema Ajv cannot compile: let the server judge the arguments.
    return { ok: true, args: value as Record<string, unknown> };
  }
  const r = check(value);
  return r.valid
    ? { ok: true, args: value as Record<string, unknown> }
    : { ok: false, message: `does not match the input schema of ${tool.name}: ${r.errorMessage}` };
}

/** A starting point for the arguments box: the required properties with placeholder values. */
export function exampleArguments(tool: Pick<Tool, 'inputSchema'>): string {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: string | string[]; default?: unknown; enum?: unknown[] }>;
  const out: Record<string, unknown> = {};
  for (const name of tool.inputSchema.required ?? []) {
    const p = props[name] ?? {};
    if (p.default !== undefined) out[name] = p.default;
    else if (p.enum && p.enum.length > 0) out[name] = p.enum[0];
    else {
      const type = Array.isArray(p.type) ? p.type[0] : p.type;
      out[name] =
        type === 'number' || type === 'integer' ? 0 : type === 'boolean' ? false : type === 'array' ? [] : type === 'object' ? {} : '';
    }
  }
  return JSON.stringify(out);
}
