import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { privateDir, socketAccepts } from '../util';
import { websocketConnector } from './connectors';
import type { Connection } from './types';

/*
 * Connection sharing for SSH executors (docs/architecture.md, "SSH executors"): ssh's own
 * ControlMaster keeps one connection per destination for CONTROL_PERSIST_S after its last use,
 * and a local forward on that master (a unix socket of ours → the remote daemon's socket) lets a
 * client reach the daemon with no remote process at all. Everything lives in
 * `<private dir>/ssh-<hash>/` (0700, hidden from every sandbox): the control socket `c` (when the
 * user's ssh config has no ControlPath of its own), the forwards `f-*` and what we know of each
 * version's remote daemon `d-*.json` (0600: its socket and token, as the remote's own 0600 files).
 */

/** How long our master outlives its last session (ssh's ControlPersist; the user's own value wins). */
export const CONTROL_PERSIST_S = 60;
/** A shared master or forward that does not answer within this long is taken for stuck (a dead network it has not noticed yet). */
export const SHARED_PATH_MS = 3_000;
/** ssh binds the control socket under a name 17 characters longer first (`.XXXXXXXXXXXXXXXX`). */
const MAX_CONTROL_PATH = (process.platform === 'darwin' ? 103 : 107) - 17;

export interface ShareDir {
  dir: string;
  /** Our ControlPath (used only when the user's ssh config has none). */
  ctl: string;
}

/**
 * Our folder for one destination as ssh is given it (the ssh binary, user, host, port and every
 * `-o` option: another key or known_hosts file is another connection, never a shared one). A
 * string says why there is none.
 */
export function shareDirFor(
  sshPath: string,
  target: { user?: string; host: string; port?: number },
  sshOptions: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): ShareDir | string {
  if (process.platform === 'win32') return 'Windows OpenSSH has no connection sharing';
  let base: string;
  try {
    base = privateDir(env);
  } catch (e) {
    return (e as Error).message;
  }
  const hash = createHash('sha256')
    .update(JSON.stringify([sshPath, target.user ?? '', target.host, target.port ?? 0, sshOptions]))
    .digest('hex')
    .slice(0, 16);
  const dir = join(base, `ssh-${hash}`);
  sweepShareDirs(base, dir);
  const ctl = join(dir, 'c');
  // ssh expands % in ControlPath and splits -L at ':'; a path with either (or blanks) is not worth escaping.
  if (/[%:\s]/.test(dir)) return `the private directory ${base} has a character ssh's ControlPath or -L cannot take`;
  if (ctl.length > MAX_CONTROL_PATH) return `the private directory ${base} is too long for a control socket`;
  return { dir, ctl };
}

/** A destination's folder with no socket in it (no master, no forward) is swept once it is this old: what it holds is relearned by the next cold connection. */
export const SHARE_DIR_STALE_MS = 60 * 60 * 1000;

/**
 * Removes the `ssh-<hash>` folders of `base` (but `keep`) that hold no socket (their master exited:
 * ssh removes its control socket and forwards with it) and that nothing touched for
 * SHARE_DIR_STALE_MS: one per destination ever used would otherwise pile up in the private
 * directory. A folder in use, or a moment old, stays.
 */
export function sweepShareDirs(base: string, keep?: string, now = Date.now()): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    if (!/^ssh-[0-9a-f]{16}$/.test(name)) continue;
    const dir = join(base, name);
    if (dir === keep) continue;
    try {
      let newest = lstatSync(dir).mtimeMs;
      let inUse = false;
      for (const f of readdirSync(dir)) {
        const st = lstatSync(join(dir, f));
        if (st.isSocket()) inUse = true;
        newest = Math.max(newest, st.mtimeMs);
      }
      if (!inUse && now - newest > SHARE_DIR_STALE_MS) rmSync(dir, { recursive: true, force: true });
    } catch {
      // gone meanwhile, or not ours to read: left alone
    }
  }
}

/** The forward to `remoteSocket` (one per remote socket: a stale record never points an old forward elsewhere). */
export function forwardPath(share: ShareDir, remoteSocket: string): string {
  return join(share.dir, `f-${createHash('sha256').update(remoteSocket).digest('hex').slice(0, 12)}`);
}

function recordPath(share: ShareDir, key: string): string {
  return join(share.dir, `d-${createHash('sha256').update(key).digest('hex').slice(0, 12)}.json`);
}

/** What a remote daemon's state.json says (src/cli/daemon.ts writes it); more fields may come. */
export const RemoteDaemonState = z
  .object({
    pid: z.number().int().positive(),
    key: z.string(),
    socket: z.string().startsWith('/'),
    platform: z.string().optional(),
    node: z.string().optional(),
    nodeVersion: z.string().optional(),
  })
  .passthrough();
export type RemoteDaemonState = z.infer<typeof RemoteDaemonState>;

/** A daemon's bearer token as it writes it (64 hex). */
export const DaemonToken = z.string().regex(/^[0-9a-f]{32,128}$/);

const DaemonRecord = z.object({
  key: z.string(),
  socket: z.string(),
  token: DaemonToken,
  pid: z.number().int().positive(),
  platform: z.string(),
  node: z.string(),
  nodeVersion: z.string(),
  /** The master carrying the forward when this was written (`ssh -O check`). */
  masterPid: z.number().int().positive().optional(),
});
export type DaemonRecord = z.infer<typeof DaemonRecord>;

export function readRecord(share: ShareDir, key: string): DaemonRecord | undefined {
  try {
    const r = DaemonRecord.safeParse(JSON.parse(readFileSync(recordPath(share, key), 'utf8')));
    return r.success && r.data.key === key ? r.data : undefined;
  } catch {
    return undefined;
  }
}

export function writeRecord(share: ShareDir, record: DaemonRecord): void {
  mkdirSync(share.dir, { recursive: true, mode: 0o700 });
  const file = recordPath(share, record.key);
  const tmp = `${file}.${process.pid}`;
  writeFileSync(tmp, JSON.stringify(record) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
}

export function forgetRecord(share: ShareDir, key: string): void {
  rmSync(recordPath(share, key), { force: true });
}

/**
 * Whose master a connection uses. `ours`: `options` go to ssh (after the user's, so a
 * `ControlPersist` of theirs wins). `theirs`: the user's ssh config names a ControlPath whose master
 * persists (or runs now): it is used as configured, we add nothing. `none`: each connection is its
 * own (`why` is logged; `options`: what keeps ssh from a master, when one must not be used).
 */
export type Sharing =
  | { kind: 'ours'; controlPath: string; options: string[] }
  | { kind: 'theirs'; controlPath: string }
  | { kind: 'none'; why: string; options: string[] };

/** `ssh -G`'s `key value` lines (keys lower case), or the reason it failed. */
export function parseSshG(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^(\S+)\s+(.*?)\s*$/.exec(line);
    if (m && !out.has(m[1]!.toLowerCase())) out.set(m[1]!.toLowerCase(), m[2]!);
  }
  return out;
}

/**
 * Decides `Sharing` from what ssh itself makes of the user's config and options (`gArgs`: the
 * destination's argv with `-G`, without ours). The user's `-o ControlPath`/`ControlMaster` (e.g.
 * `ControlMaster=no`) or a ControlPath in their ssh config always win over ours.
 */
export async function decideSharing(
  sshPath: string,
  gArgs: string[],
  sshOptions: readonly string[],
  share: ShareDir | string,
  env: NodeJS.ProcessEnv,
): Promise<Sharing> {
  if (typeof share === 'string') return { kind: 'none', why: share, options: [] };
  const g = await runSsh(sshPath, gArgs, env, SHARED_PATH_MS);
  if (g.code !== 0)
    return { kind: 'none', options: [], why: `ssh -G failed (${g.code ?? 'timed out'}): ${g.stderr.trim().split('\n').pop() ?? ''}` };
  const conf = parseSshG(g.stdout);
  const controlPath = conf.get('controlpath');
  const ownOption = sshOptions.some((o) => /^\s*control(path|master)\s*[=\s]/i.test(o));
  if (controlPath || ownOption) {
    if (!controlPath) return { kind: 'none', why: 'the ssh options turn connection sharing off', options: [] };
    const master = conf.get('controlmaster');
    const persists = conf.get('controlpersist') !== 'no';
    if ((master === 'auto' || master === 'true') && persists) return { kind: 'theirs', controlPath };
    if (await socketAccepts(controlPath)) return { kind: 'theirs', controlPath };
    return {
      kind: 'none',
      options: [],
      why: `the ssh config's ControlPath ${controlPath} has no master that persists (ControlMaster auto with ControlPersist)`,
    };
  }
  const options = ['ControlMaster=auto', `ControlPath=${share.ctl}`];
  if (conf.get('controlpersist') === 'no') options.push(`ControlPersist=${CONTROL_PERSIST_S}`);
  return { kind: 'ours', controlPath: share.ctl, options };
}

export interface SshResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs ssh to its end (bounded by `timeoutMs`: then killed, code null). */
export function runSsh(sshPath: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<SshResult> {
  return new Promise((resolve) => {
    const child = spawn(sshPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4096)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: e.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The pid `ssh -O check` reports for the master, if one runs. */
export function masterPidOf(check: SshResult): number | undefined {
  const m = /Master running \(pid=(\d+)\)/.exec(check.stderr + check.stdout);
  return m ? Number(m[1]) : undefined;
}

/**
 * Connects to the daemon through a forward, within SHARED_PATH_MS. `stale`: nothing listens on it
 * (its master is gone; the file is removed); `stuck`: it accepts but no answer came in time.
 */
export async function connectThroughForward(
  fwd: string,
  token: string,
  signal: AbortSignal,
): Promise<{ ok: Connection } | { error: Error; stale: boolean; stuck: boolean }> {
  const bound = AbortSignal.any([signal, AbortSignal.timeout(SHARED_PATH_MS)]);
  try {
    return { ok: await websocketConnector(`ws+unix:${fwd}:/`, token)(bound) };
  } catch (e) {
    const stuck = bound.aborted && !signal.aborted;
    const stale = !stuck && !(await socketAccepts(fwd));
    if (stale) rmSync(fwd, { force: true });
    return { error: e as Error, stale, stuck };
  }
}

/** Removes a forward's socket file when nothing listens on it (a master that died left it): ssh cannot bind over it. */
export async function clearStaleForward(fwd: string): Promise<void> {
  if (!lstatSync(fwd, { throwIfNoEntry: false })) return;
  if (!(await socketAccepts(fwd))) rmSync(fwd, { force: true });
}
