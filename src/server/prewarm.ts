import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import type { Socket } from 'node:net';
import { closeChildEnds, type FifoPool } from './fifoPool';
import { killTree } from './processTree';
import type { PrewarmListeners, PrewarmSpec } from './spawnPlan';

/**
 * Sandboxes built ahead of time. Building a bubblewrap sandbox (namespaces, a dozen mounts, a
 * fresh /dev and /proc) costs 10–20 ms on a small machine; running a command in a finished one
 * costs one `exec`. After a sandboxed start, one sandbox like it is built in the background and
 * waits (a `/bin/sh` reading its script on stdin) for the next start with the same plan key and
 * host fingerprint, which then only sends the script. Entries are few (`max`), die after `idleMs`
 * unused, are killed with the server (and by bwrap's `--die-with-parent` if the server dies), and
 * a start that finds none (or a stale one) builds its sandbox on the spot as before. A managed
 * network's sandbox is built with listeners of its own (`PrewarmSpec.listeners`): the start that
 * takes it takes them over; an unused one's close with it.
 */
export interface PrewarmOptions {
  /** How long an unused sandbox waits before it is torn down; 0 turns pre-starting off. */
  idleMs?: number;
  /** At most this many waiting sandboxes (distinct plans); the least recently built goes first. */
  max?: number;
  /** Diagnostics (the server's --verbose log). */
  log?: (line: string) => void;
}

/** A pre-started sandbox handed to a start. */
export interface WarmSandbox {
  child: ChildProcess;
  /** Our ends of the child's stdio, in order: stdin (only when piped), stdout, stderr. */
  ends: Socket[];
  /** Sends the script: the command runs now. */
  run(script: string): void;
  /** Releases what the sandbox held; call once, after the process has closed. */
  release(): void;
}

interface Entry {
  slot: string;
  fingerprint: string;
  /** The other servers' private directories it covers (`PrewarmSpec.covers` when it was built). */
  covers: string[];
  child: ChildProcess;
  ends: Socket[];
  control: Socket;
  release: () => void;
  /** Its own managed-network listeners, until a start takes them over. */
  listeners?: PrewarmListeners;
  timer: NodeJS.Timeout;
  exited: boolean;
}

export const DEFAULT_PREWARM_IDLE_MS = 30_000;
const DEFAULT_MAX = 4;
/**
 * How long a waiting sandbox that holds placeholder directories (for a missing `.git`, `.vscode`,
 * `.codex`: they exist on the host while it waits) may wait: long enough for commands run in
 * quick succession, short enough that they do not linger in the workspace.
 */
const PLACEHOLDER_IDLE_MS = 5_000;
/** A command that runs this long shares the CPU with the build of its successor (it is no quick one). */
const BUILD_DELAY_MS = 200;

export class SandboxPrewarmer {
  /** Waiting sandboxes by slot (plan key + stdio shape), oldest first. */
  private readonly entries = new Map<string, Entry>();
  private readonly building = new Set<string>();
  private disposed = false;
  private readonly idleMs: number;
  private readonly max: number;
  private readonly log: (line: string) => void;

  constructor(
    private readonly fifos: FifoPool,
    options: PrewarmOptions = {},
  ) {
    this.idleMs = options.idleMs ?? DEFAULT_PREWARM_IDLE_MS;
    this.max = Math.max(1, options.max ?? DEFAULT_MAX);
    this.log = options.log ?? (() => undefined);
  }

  get enabled(): boolean {
    return this.idleMs > 0 && !this.disposed;
  }

  /**
   * A waiting sandbox for exactly this plan, or undefined. One whose host fingerprint changed
   * since it was built (a remount, a workspace made anew) is torn down, never used.
   */
  take(spec: PrewarmSpec, pipeStdin: boolean): WarmSandbox | undefined {
    const e = this.entries.get(slotOf(spec, pipeStdin));
    if (!e || e.exited) return undefined;
    this.entries.delete(e.slot);
    clearTimeout(e.timer);
    const missing = (spec.covers ?? []).filter((c) => !e.covers.includes(c));
    if (missing.length > 0) {
      this.log(
        `sandbox prewarm: the waiting sandbox (pid ${e.child.pid}) does not cover ${missing.join(', ')} (another server's, new since it was built); building one on the spot`,
      );
      setImmediate(() => this.discard(e));
      return undefined;
    }
    if (e.fingerprint !== spec.fingerprint()) {
      this.log(`sandbox prewarm: the waiting sandbox (pid ${e.child.pid}) predates a change on the host; building one on the spot`);
      setImmediate(() => this.discard(e)); // off the start's path: killing scans the process table
      return undefined;
    }
    if (e.listeners && !spec.listeners?.adopt(e.listeners)) {
      this.log(`sandbox prewarm: the waiting sandbox (pid ${e.child.pid}) has listeners this start cannot use; building one on the spot`);
      setImmediate(() => this.discard(e));
      return undefined;
    }
    e.listeners = undefined; // the start's now: closed with its plan
    this.log(`sandbox prewarm: running in the waiting sandbox (pid ${e.child.pid})`);
    e.child.removeAllListeners('exit');
    return {
      child: e.child,
      ends: e.ends,
      run: (script) => e.control.end(script),
      release: once(e.release),
    };
  }

  /**
   * Builds one sandbox for the next start like `spec`, in the background (at most one per slot).
   * With `after` (the command that just started has closed), the build waits for it or for
   * `BUILD_DELAY_MS`, whichever comes first: spawning is synchronous, and a short command should
   * neither share the CPU with building its successor nor have its last events wait behind it.
   */
  prepare(spec: PrewarmSpec, pipeStdin: boolean, after?: Promise<unknown>): void {
    const slot = slotOf(spec, pipeStdin);
    if (!this.enabled || !this.fifos.available || this.entries.has(slot) || this.building.has(slot)) return;
    this.building.add(slot);
    let timer: NodeJS.Timeout | undefined;
    const delayed = new Promise<void>((resolve) => (timer = setTimeout(resolve, after ? BUILD_DELAY_MS : 0)));
    void Promise.race([delayed, after?.catch(() => undefined) ?? delayed])
      .then(() => new Promise((resolve) => setImmediate(resolve))) // after the events of this turn went out
      .then(() => {
        clearTimeout(timer);
        return this.build(spec, pipeStdin, slot);
      })
      .catch(() => undefined) // a failed build only means the next start builds its own
      .finally(() => this.building.delete(slot));
  }

  private async build(spec: PrewarmSpec, pipeStdin: boolean, slot: string): Promise<void> {
    if (!this.enabled) return;
    // The placeholder stubs first (made again if a release removed them), then the fingerprint, both
    // before bwrap makes its mounts: any change after this point makes the two differ.
    const retained = once(spec.retain());
    const fingerprint = spec.fingerprint();
    let listeners: PrewarmListeners | undefined;
    const release = (): void => {
      retained();
      listeners?.release();
    };
    let pipes: Array<{ ours: Socket; childFd: number }>;
    try {
      listeners = await spec.listeners?.start();
      // The script pipe (the child reads it), stdout, stderr, then the command's stdin if piped.
      pipes = await this.fifos.open(pipeStdin ? [true, false, false, true] : [true, false, false]);
    } catch (e) {
      release();
      throw e;
    }
    const ours = pipes.map((p) => p.ours);
    const control = ours.shift()!;
    const childFds = pipes.map((p) => p.childFd);
    const fileFds: number[] = [];
    let child: ChildProcess;
    try {
      if (!this.enabled) throw new Error('disposed');
      for (const f of spec.launch.files) fileFds.push(openSync(f, 'r'));
      // Without a piped stdin the command reads /dev/null, as a start on the spot would.
      if (!pipeStdin) fileFds.push(openSync('/dev/null', 'r'));
      const stdio = [childFds[0]!, childFds[1]!, childFds[2]!, ...fileFds, ...childFds.slice(3)];
      // The stub needs no environment: the script execs the command through `env -i`.
      child = spawn(spec.launch.file, listeners?.args ?? spec.launch.args, { env: {}, detached: true, stdio });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } catch (e) {
      for (const s of [...ours, control]) s.destroy();
      release();
      throw e;
    } finally {
      closeChildEnds([...childFds, ...fileFds]);
    }
    child.on('error', () => undefined);
    if (pipeStdin) ours.unshift(ours.pop()!); // our ends in stdio order: stdin, stdout, stderr
    this.log(`sandbox prewarm: built one for the next start like this (pid ${child.pid})`);
    // Placeholder directories it holds are visible in the user's workspace: keep those short.
    const idleMs = spec.holdsPlaceholders ? Math.min(this.idleMs, PLACEHOLDER_IDLE_MS) : this.idleMs;
    const entry: Entry = {
      slot,
      fingerprint,
      covers: [...(spec.covers ?? [])],
      child,
      ends: ours,
      control,
      release: retained,
      listeners,
      exited: false,
      timer: setTimeout(() => {
        if (this.entries.get(slot) !== entry) return;
        this.log(`sandbox prewarm: unused for ${idleMs} ms, torn down (pid ${child.pid})`);
        this.entries.delete(slot);
        this.discard(entry);
      }, idleMs),
    };
    entry.timer.unref();
    control.on('error', () => undefined);
    child.on('exit', (code, signal) => {
      entry.exited = true;
      const unexpected = this.entries.get(slot) === entry;
      if (unexpected) this.entries.delete(slot);
      if (!unexpected) return this.discard(entry);
      // Ended on its own before any use: bwrap could not build it. Say why (its stderr), then drop it.
      const stderr = entry.ends.at(-1)!;
      let text = '';
      stderr.on('data', (d: Buffer) => (text += d.toString('utf8').slice(0, 1024)));
      stderr.once('close', () => {
        this.log(
          `sandbox prewarm: the waiting sandbox (pid ${child.pid}) ended before use (${signal ?? `exit ${code}`}): ${text.trim().split('\n')[0] ?? ''}`,
        );
        this.discard(entry);
      });
      stderr.resume();
    });
    if (!this.enabled) return this.discard(entry);
    for (const [oldSlot, old] of this.entries) {
      if (this.entries.size < this.max) break;
      this.entries.delete(oldSlot);
      this.discard(old);
    }
    this.entries.set(slot, entry);
  }

  private discard(e: Entry): void {
    clearTimeout(e.timer);
    for (const s of [...e.ends, e.control]) s.destroy();
    e.listeners?.release();
    e.listeners = undefined;
    // Its placeholder stubs go only once nothing of it can run: a bwrap still building its mounts
    // makes a missing mount point again on the host, and an empty `.git` or `.vscode` that no one
    // claims was left in the user's workspace (and a test's folder could not be removed, CI c29).
    if (!e.exited && e.child.pid) void killTree(e.child.pid, () => !e.exited).then(e.release);
    else e.release();
  }

  /** Tears down every waiting sandbox; nothing is built afterwards. */
  dispose(): void {
    this.disposed = true;
    for (const e of this.entries.values()) this.discard(e);
    this.entries.clear();
  }
}

function slotOf(spec: PrewarmSpec, pipeStdin: boolean): string {
  return `${pipeStdin ? 'stdin' : 'no-stdin'}\n${spec.key}`;
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
