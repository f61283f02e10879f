import { constants as fsConstants, existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { describeZodError, SandboxContext } from '../protocol';
import { RpcError } from '../rpc';
import { sandboxHiddenDirs } from '../util';
import { computeLayout, MINIMAL_PATHS, type Layout, type Mount } from './sandbox/layout';
import { isWithin, resolvePolicy, SandboxUnsupportedError } from './sandbox/policy';

/*
 * The `sandbox` field of `fs/*` requests. Codex runs a sandboxed fs call in a sandboxed helper; we
 * run it in the server, after checking every path the call touches against the layout the same
 * `sandbox` value would give a sandboxed command (policy.ts + layout.ts: same writable roots,
 * carve-outs, deny entries). Paths are checked as real paths (symlinks resolved the way the kernel
 * resolves them, dangling ones included), and the operation then runs on a directory opened by
 * that real path and re-checked through /proc/self/fd, so a symlink swapped in between cannot
 * lead it elsewhere. Errors are what the call gets inside codex's sandbox: EROFS for a write
 * outside the writable roots, EACCES for a denied path, ENOENT for a path the sandbox cannot see.
 */

export type FsAccess = 'write' | 'read' | 'deny' | 'none';

export function errnoError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}

/** bwrap gives every sandbox a fresh /dev and /proc; fs calls may read there, never write. */
const SYSTEM_PATHS = ['/dev', '/proc'];
const MAX_SYMLINK_HOPS = 40;

/** Linux: an opened directory can be re-entered by `/proc/self/fd/N`, whatever happens to its path. */
export const FD_PATHS = process.platform === 'linux' && existsSync('/proc/self/fd');

const SandboxField = z.object({ sandbox: SandboxContext });

function mountAccess(m: Mount, root: Layout['root']): FsAccess {
  switch (m.kind) {
    case 'bind':
      return 'write';
    case 'ro-bind':
      return 'read';
    case 'placeholder':
      return m.mode === 0 ? 'deny' : 'read';
    case 'deny-dir':
    case 'deny-file':
      return 'deny';
    case 'tmpfs':
      // A sandboxed command gets a private /tmp whose writes vanish; an fs call sees the host's,
      // read-only, where the host is visible (as in codex, where an empty root has no /tmp).
      return root === 'empty' ? 'none' : 'read';
  }
}

export class FsSandbox {
  /** What every sandboxed command has hidden (bwrapArgs `hidden`): ours and every other server's private directory. */
  private readonly hidden = ((d) => [...d.own, ...d.others])(sandboxHiddenDirs());

  private constructor(private readonly layout: Layout) {}

  /**
   * The policy of a request's `sandbox` field; undefined when it runs the command unsandboxed (absent,
   * null, `disabled`, the whole disk with the network on). The whole disk with the network off
   * (`external`, unrestricted file system) is still a sandbox: everything but our private
   * directories, as for its command. Invalid values are -32602 as in codex.
   */
  static fromRequest(sandbox: unknown): FsSandbox | undefined {
    if (sandbox === undefined || sandbox === null) return undefined;
    // Parsed as the field it is, so that messages name what is wrong with it (`missing field …`).
    const parsed = SandboxField.safeParse({ sandbox });
    if (!parsed.success) throw RpcError.invalidParams(describeZodError(parsed.error));
    const ctx = parsed.data.sandbox;
    const perms = ctx.permissions;
    if (perms.type === 'disabled') return undefined;
    const dynamic =
      perms.type === 'managed' &&
      perms.file_system.type === 'restricted' &&
      perms.file_system.entries.some(
        (e) => e.path.type === 'special' && (e.path.value.kind === 'current_working_directory' || e.path.value.kind === 'project_roots'),
      );
    // An fs call has no cwd of its own to anchor these to.
    if (dynamic && !ctx.cwd) throw RpcError.invalidParams('file system sandbox context with dynamic permissions requires cwd');
    try {
      const env: Record<string, string> = process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {};
      const policy = resolvePolicy(sandbox, '/', env);
      if (policy.unrestricted) return undefined;
      return new FsSandbox(computeLayout(policy));
    } catch (e) {
      if (e instanceof RpcError) throw e;
      if (e instanceof SandboxUnsupportedError) {
        throw RpcError.internal(`sandbox unavailable: ${e.message}`, { kind: 'sandboxUnavailable', reason: e.message });
      }
      throw e;
    }
  }

  /** What the sandbox allows at a real path: the deepest mount covering it wins, as in bwrap. */
  accessAt(real: string): FsAccess {
    const { root, mounts } = this.layout;
    let access: FsAccess = root === 'rw' ? 'write' : root === 'ro' ? 'read' : 'none';
    if (root === 'empty' && MINIMAL_PATHS.some((m) => isWithin(real, m))) access = 'read';
    if (SYSTEM_PATHS.some((m) => isWithin(real, m))) access = 'read';
    for (const m of mounts) if (isWithin(real, m.path)) access = mountAccess(m, root);
    // Hidden from every sandboxed command (bwrapArgs `hidden`), so from its fs calls too.
    if (access !== 'none' && this.hidden.some((d) => isWithin(real, d))) access = 'deny';
    return access;
  }

  /** A mount strictly inside `real` with less than `need` (a recursive copy or remove would hit it). */
  blocksSubtree(real: string, need: 'read' | 'write'): boolean {
    const weaker = (a: FsAccess) => a === 'deny' || a === 'none' || (need === 'write' && a === 'read');
    return this.layout.mounts.some((m) => m.path !== real && isWithin(m.path, real) && weaker(mountAccess(m, this.layout.root)));
  }

  /** Throws what a sandboxed read of `real` fails with. */
  checkRead(real: string): void {
    const a = this.accessAt(real);
    if (a === 'deny') throw errnoError('EACCES');
    if (a === 'none') throw errnoError('ENOENT');
  }

  /**
   * Throws what a sandboxed write (create, modify, remove) of `real` fails with: inside a denied
   * directory the lookup fails (EACCES); a denied path itself is a read-only mount (EROFS).
   */
  checkWrite(real: string): void {
    const a = this.accessAt(real);
    if (a === 'write') return;
    if (a === 'deny') throw errnoError(this.layout.mounts.some((m) => m.path === real) ? 'EROFS' : 'EACCES');
    if (a === 'none') throw errnoError('ENOENT');
    throw errnoError('EROFS');
  }
}

/**
 * The real path `path` names, resolving symlinks component by component as the kernel does
 * (`followFinal`: also the last one); a missing tail is appended as it is, so a dangling link
 * gives the path it would create. Errors are the ones the kernel would give (ENOTDIR, ELOOP, …).
 */
export async function resolveReal(path: string, followFinal: boolean): Promise<string> {
  const pending = path
    .split('/')
    .filter((p) => p !== '')
    .reverse();
  let current = '/';
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (name === '.') continue;
    if (name === '..') {
      current = dirname(current);
      continue;
    }
    const next = join(current, name);
    const last = pending.length === 0;
    let st;
    try {
      st = await fsp.lstat(next);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      // Past a missing directory the kernel stops (ENOENT); only a plain missing tail is a path to create.
      const rest = pending.reverse();
      if (rest.some((p) => p === '..')) throw e;
      return join(next, ...rest);
    }
    if (st.isSymbolicLink() && (!last || followFinal)) {
      if (++hops > MAX_SYMLINK_HOPS) throw errnoError('ELOOP');
      const target = await fsp.readlink(next);
      if (target.startsWith('/')) current = '/';
      pending.push(
        ...target
          .split('/')
          .filter((p) => p !== '')
          .reverse(),
      );
      continue;
    }
    if (!last && !st.isDirectory()) throw errnoError('ENOTDIR');
    current = next;
  }
  return current;
}

/** An opened directory: `path` reaches it (and only it) for as long as it is open. */
export interface AnchoredDir {
  /** `/proc/self/fd/N` on Linux, else the real path it was opened by. */
  path: string;
  /** Where the directory really is now. */
  real: string;
  close(): Promise<void>;
}

/** Where an open file really is (Linux); elsewhere the path it was opened by. */
export async function realPathOfHandle(file: fsp.FileHandle, openedAs: string): Promise<string> {
  if (!FD_PATHS) return openedAs;
  return fsp.readlink(`/proc/self/fd/${file.fd}`);
}

/** Opens the directory at the real path `real` (not through a link) and reports where it really is. */
export async function openDirectory(real: string): Promise<AnchoredDir> {
  const handle = await fsp.open(real, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
  try {
    const actual = await realPathOfHandle(handle, real);
    return { path: FD_PATHS ? `/proc/self/fd/${handle.fd}` : real, real: actual, close: () => handle.close() };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** Runs `step` with the parent directory of `real` opened and anchored; `step` gets the path of the child. */
export async function inParent<T>(real: string, step: (childPath: string, dir: AnchoredDir, name: string) => Promise<T>): Promise<T> {
  const dir = await openDirectory(dirname(real));
  try {
    const name = real.slice(dirname(real).length).replace(/^\//, '');
    return await step(join(dir.path, name), dir, name);
  } finally {
    await dir.close();
  }
}
