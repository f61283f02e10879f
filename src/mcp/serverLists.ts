import type { Client } from '@modelcontextprotocol/client';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { isToolEnabled, type McpServerDefinition } from './config';

export type ListKind = 'tools' | 'resources' | 'prompts';
export const ALL_LISTS: readonly ListKind[] = ['tools', 'resources', 'prompts'];

/** What a ready server offers: its tools (all, and the ones the filters let through), resources, templates and prompts. */
export class McpServerLists {
  allTools: Tool[] = [];
  tools: Tool[] = [];
  resources: Resource[] = [];
  resourceTemplates: ResourceTemplate[] = [];
  prompts: Prompt[] = [];

  /**
   * Reads the lists of `kinds` the server has a capability for. An answer is kept only while
   * `current()` holds (the run that asked is still the server's); `onTools` runs after new tools.
   */
  async load(sdk: Client, kinds: readonly ListKind[], request: RequestOptions, current: () => boolean, onTools: () => void): Promise<void> {
    const caps = sdk.getServerCapabilities() ?? {};
    const jobs: Promise<void>[] = [];
    if (kinds.includes('tools') && caps.tools) {
      jobs.push(
        paginate(
          (cursor) => sdk.listTools(cursor ? { cursor } : {}, request),
          (r) => r.tools as Tool[],
        ).then((tools) => {
          if (!current()) return;
          this.allTools = tools;
          onTools();
        }),
      );
    }
    if (kinds.includes('resources') && caps.resources) {
      jobs.push(
        paginate(
          (cursor) => sdk.listResources(cursor ? { cursor } : {}, request),
          (r) => r.resources as Resource[],
        ).then((v) => {
          if (current()) this.resources = v;
        }),
      );
      jobs.push(
        paginate(
          (cursor) => sdk.listResourceTemplates(cursor ? { cursor } : {}, request),
          (r) => r.resourceTemplates as ResourceTemplate[],
        ).then((v) => {
          if (current()) this.resourceTemplates = v;
        }),
      );
    }
    if (kinds.includes('prompts') && caps.prompts) {
      jobs.push(
        paginate(
          (cursor) => sdk.listPrompts(cursor ? { cursor } : {}, request),
          (r) => r.prompts as Prompt[],
        ).then((v) => {
          if (current()) this.prompts = v;
        }),
      );
    }
    await Promise.all(jobs);
  }

  /** `tools` = `allTools` through the definition's `enabledTools`/`disabledTools`. */
  applyToolFilter(def: Pick<McpServerDefinition, 'enabledTools' | 'disabledTools'> | undefined): void {
    this.tools = def ? this.allTools.filter((t) => isToolEnabled(def, t.name)) : [...this.allTools];
  }

  /** Empties every list; says whether any had something. */
  clear(): boolean {
    const had = this.allTools.length + this.resources.length + this.resourceTemplates.length + this.prompts.length > 0;
    this.allTools = [];
    this.tools = [];
    this.resources = [];
    this.resourceTemplates = [];
    this.prompts = [];
    return had;
  }
}

/** Loops `nextCursor` (bounded: a server that returns cursors forever must not hang us). */
async function paginate<R extends { nextCursor?: string | undefined }, T>(
  fetch: (cursor: string | undefined) => Promise<R>,
  items: (r: R) => T[],
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const r = await fetch(cursor);
    out.push(...items(r));
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return out;
}
