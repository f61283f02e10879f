import { isAbsolute, join, normalize, resolve, sep } from 'node:path';
import { SandboxContext, type FileSystemSandboxEntry, type FileSystemSpecialPath } from '../../protocol';
import { pathFromUri } from '../uri';

/*
 * Step 1 of planning: the wire `sandbox` value → a platform-neutral policy over absolute local
 * paths. Pure path math (no filesystem access), so it is unit-tested directly; the filesystem-aware
 * step (symlinks, carve-outs, placeholders) is ./layout.ts.
 */

export type Access = 'read' | 'write' | 'deny';

export interface PathRule {
  /** Absolute, normalised (not yet resolved through symlinks). */
  path: string;
  access: Access;
  /** Only from `slash_tmp`/`tmpdir`: a scratch area, which gets no `.git`-style carve-outs. */
  scratch?: boolean;
}

export interface ResolvedPolicy {
  /** Nothing is restricted: the command runs as it is (`sandboxType: "none"`). */
  unrestricted: boolean;
  /** `unrestricted` = the whole disk is writable and only the network may be cut. */
  fs: 'restricted' | 'unrestricted';
  network: 'enabled' | 'restricted';
  /** Restricted fs only: the entries, deduplicated (deny > write > read for the same path). */
  rules: PathRule[];
  /** Restricted fs only: the system directories (`minimal`) are readable even without `root`. */
  minimal: boolean;
  /** Where the command runs (absolute). */
  cwd: string;
}

/** Thrown when the request is well-formed but asks for something this executor cannot enforce. */
export class SandboxUnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnsupportedError';
  }
}

const PRECEDENCE: Record<Access, number> = { read: 0, write: 1, deny: 2 };

export const NO_SANDBOX: Omit<ResolvedPolicy, 'cwd'> = {
  unrestricted: true,
  fs: 'unrestricted',
  network: 'enabled',
  rules: [],
  minimal: false,
};

/**
 * Parses and resolves the `sandbox` field of a start request. `cwd` and `env` are the child's
 * (already decoded) working directory and environment. Absent/null ⇒ unrestricted.
 */
export function resolvePolicy(sandbox: unknown, cwd: string, env: Record<string, string>): ResolvedPolicy {
  if (sandbox === undefined || sandbox === null) return { ...NO_SANDBOX, cwd };
  const parsed = SandboxContext.safeParse(sandbox);
  if (!parsed.success)
    throw new SandboxUnsupportedError(`invalid sandbox: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const ctx = parsed.data;
  const perms = ctx.permissions;
  if (perms.type === 'disabled') return { ...NO_SANDBOX, cwd };
  if (perms.type === 'external' || perms.file_system.type === 'unrestricted') {
    const network = perms.network;
    if (network === 'enabled') return { ...NO_SANDBOX, cwd };
    return { unrestricted: false, fs: 'unrestricted', network, rules: [], minimal: false, cwd };
  }

  const anchor = ctx.cwd ? pathFromUri(ctx.cwd, 'sandbox.cwd') : cwd;
  const workspaceRoots = (ctx.workspaceRoots ?? []).map((u) => pathFromUri(u, 'sandbox.workspaceRoots'));
  const tmpDirs = ctx.temporaryDirectories
    ? ctx.temporaryDirectories.map((u) => pathFromUri(u, 'sandbox.temporaryDirectories'))
    : env.TMPDIR
      ? [env.TMPDIR]
      : [];

  const byPath = new Map<string, PathRule>();
  let minimal = false;
  const add = (p: string, access: Access, scratch: boolean) => {
    const path = normalize(p).replace(/(.)\/+$/, '$1');
    const prev = byPath.get(path);
    const strongest = prev === undefined || PRECEDENCE[access] > PRECEDENCE[prev.access] ? access : prev.access;
    // A path is scratch only if every entry naming it is (a workspace at /tmp keeps its carve-outs).
    byPath.set(path, { path, access: strongest, ...((prev === undefined || prev.scratch) && scratch ? { scratch: true } : {}) });
  };
  for (const entry of perms.file_system.entries) {
    const access: Access = entry.access === 'none' ? 'deny' : entry.access;
    const scratch = entry.path.type === 'special' && (entry.path.value.kind === 'slash_tmp' || entry.path.value.kind === 'tmpdir');
    for (const p of entryPaths(entry, { anchor, workspaceRoots, tmpDirs })) {
      if (p === 'minimal') minimal = minimal || access !== 'deny';
      else add(p, access, scratch);
    }
  }
  const rules = [...byPath.values()];
  return { unrestricted: false, fs: 'restricted', network: perms.network, rules, minimal, cwd };
}

interface Anchors {
  anchor: string;
  workspaceRoots: string[];
  tmpDirs: string[];
}

/** The absolute paths one entry stands for (`'minimal'` for the system-directories token). */
function entryPaths(entry: FileSystemSandboxEntry, a: Anchors): string[] {
  const access = entry.access === 'none' ? 'deny' : entry.access;
  const p = entry.path;
  switch (p.type) {
    case 'path':
      return [pathFromUri(p.path, 'sandbox path')];
    case 'glob_pattern':
      throw new SandboxUnsupportedError(
        `glob_pattern entries (${JSON.stringify(p.pattern)}) are not supported by this exec-server's sandbox; list the paths instead`,
      );
    case 'special':
      return specialPaths(p.value, access, a);
  }
}

function specialPaths(v: FileSystemSpecialPath, access: Access, a: Anchors): string[] {
  switch (v.kind) {
    case 'root':
      return ['/'];
    case 'minimal':
      return ['minimal'];
    case 'current_working_directory':
      return [a.anchor];
    case 'project_roots': {
      // Codex 0.171 resolves these against `workspaceRoots` only; with none we use the anchor (cwd).
      const roots = a.workspaceRoots.length > 0 ? a.workspaceRoots : [a.anchor];
      return roots.map((r) => (v.subpath ? subpathOf(r, v.subpath) : r));
    }
    case 'tmpdir':
      // A TMPDIR of "/" (or a relative one) must not turn into "the whole disk is writable".
      return a.tmpDirs.filter((d) => isAbsolute(d) && normalize(d) !== '/');
    case 'slash_tmp':
      return ['/tmp'];
    case 'unknown':
      if (access === 'deny')
        throw new SandboxUnsupportedError(`unknown special path ${JSON.stringify(v.path)} cannot be denied by this exec-server's sandbox`);
      return []; // less access than asked: safe to ignore, as codex does
  }
}

function subpathOf(root: string, subpath: string): string {
  const p = resolve(root, subpath);
  if (isAbsolute(subpath) || !(p === root || p.startsWith(root.endsWith(sep) ? root : root + sep))) {
    throw new SandboxUnsupportedError(`project_roots subpath ${JSON.stringify(subpath)} must stay inside the root`);
  }
  return join(root, subpath);
}

/** `p` is `dir` or inside it (plain path math). */
export function isWithin(p: string, dir: string): boolean {
  if (dir === '/') return p.startsWith('/');
  return p === dir || p.startsWith(dir + '/');
}

export function depthOf(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1;
}
