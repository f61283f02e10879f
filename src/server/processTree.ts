import { existsSync, readdirSync, readFileSync } from 'node:fs';

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** Exited, not yet reaped (or being torn down): nothing left to kill. */
  zombie: boolean;
}

/** Parses `/proc/<pid>/stat`: "pid (comm) state ppid pgrp session …"; comm may hold spaces and parens. */
export function parseStat(pid: number, stat: string): ProcInfo | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const f = stat.slice(close + 2).split(' ', 4);
  if (f.length < 4) return undefined;
  return { pid, ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]), zombie: f[0] === 'Z' || f[0] === 'X' };
}

function pidsInProc(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 0) out.push(pid);
  }
  return out;
}

function readProc(pid: number): ProcInfo | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined; // exited meanwhile
  }
}

/** Reads pid, ppid, pgid and session of every process from /proc (Linux). */
export function listProcesses(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const pid of pidsInProc()) {
    const p = readProc(pid);
    if (p) out.push(p);
  }
  return out;
}

/** Stat files read between two yields to the event loop during a scan. */
const SCAN_CHUNK = 200;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** `listProcesses`, in chunks: other clients are served while a large /proc is read. */
async function scanProcesses(): Promise<ProcInfo[]> {
  const pids = pidsInProc();
  const out: ProcInfo[] = [];
  for (let i = 0; i < pids.length; i++) {
    if (i > 0 && i % SCAN_CHUNK === 0) await yieldToLoop();
    const p = readProc(pids[i]!);
    if (p) out.push(p);
  }
  return out;
}

/** A root of a tree to find: its pid, and whether that pid still names our (unreaped) child. */
interface Root {
  pid: number;
  leaderAlive: boolean;
}

/**
 * Whether the process group and session numbered `pid` may still be ours once our process of that
 * pid was reaped. The kernel does not give a pid out again while any process still has it as its
 * group or session id: while something is left of our group, no process has that pid; once a
 * process has it, the pid was given out again and a group or session of that number is the
 * newcomer's, never ours. (With pid_max at 32768 a pid comes back within minutes on a busy machine:
 * a SIGKILL to a long-dead leader's group once killed an unrelated command that had its pid.)
 * Elsewhere than Linux there is no /proc to ask: assumed ours.
 */
export function reapedGroupIsOurs(pid: number): boolean {
  return process.platform !== 'linux' || !existsSync(`/proc/${pid}`);
}

/**
 * Every process of the trees rooted at `roots`: processes in a root's process group or session
 * (which catches `nohup` children already reparented), the root itself while it is ours, and all
 * their descendants by parent links (which catches `setsid` children while their parent lives).
 */
function collectTrees(roots: Root[], procs: ProcInfo[]): Set<number> {
  const children = new Map<number, number[]>();
  for (const p of procs) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  // A reaped leader's pid that a process has again: its group and session are not ours (see
  // `reapedGroupIsOurs`), so that root is passed over.
  const present = new Set(procs.map((p) => p.pid));
  const ours = roots.filter((r) => r.leaderAlive || !present.has(r.pid));
  const groups = new Set(ours.map((r) => r.pid));
  const leaders = new Set(ours.filter((r) => r.leaderAlive).map((r) => r.pid));
  const found = new Set<number>();
  const queue: number[] = [];
  for (const p of procs) {
    if (leaders.has(p.pid) || groups.has(p.pgid) || groups.has(p.sid)) queue.push(p.pid);
  }
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (found.has(pid) || pid === process.pid) continue;
    found.add(pid);
    for (const c of children.get(pid) ?? []) queue.push(c);
  }
  return found;
}

/** The tree of one root (see `collectTrees`). */
export function collectTree(rootPid: number, procs: ProcInfo[] = listProcesses()): number[] {
  return [...collectTrees([{ pid: rootPid, leaderAlive: true }], procs)];
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone (or, for a group, no member left)
  }
}

/** Rounds of "scan, stop what is new" before the kill; a tree that still grows is killed anyway and retried. */
const FREEZE_ROUNDS = 16;
const KILL_PASSES = 4;

/**
 * Kills whole trees in batches. Every kill asked for while a batch runs joins the next one, and
 * one /proc scan serves every root of a batch: 500 terminates cost a handful of scans, not 500
 * (each of them of all of /proc, several times), and the event loop is given back between chunks.
 *
 * A tree is frozen before it is killed: SIGSTOP to each root's group first (stopping reparents
 * nothing), then "scan, SIGSTOP every member not yet stopped" until a scan finds no new member.
 * A stopped process cannot fork, so at that point the parent links name every descendant, a
 * `setsid` grandchild included; only then is everything SIGKILLed, so that no member is orphaned
 * (and lost to the parent links) before it was seen. Our direct children are reaped by their
 * owners (child_process, node-pty); orphans by init.
 */
class TreeKiller {
  private queued = new Map<number, () => boolean>();
  private running: Promise<void> | undefined;

  kill(rootPid: number, leaderAlive: () => boolean): Promise<void> {
    if (process.platform !== 'linux') {
      signal(-rootPid, 'SIGKILL');
      return Promise.resolve();
    }
    this.queued.set(rootPid, leaderAlive);
    this.running ??= this.drain();
    return this.idle();
  }

  /**
   * Resolves once every kill asked for so far is done (a kill asked for during a drain may need the
   * next one). Never rejects: a drain that failed is done too, as far as waiting goes.
   */
  async idle(): Promise<void> {
    for (let i = 0; this.running && i < 1_000_000; i++) await this.running.catch(() => undefined);
  }

  private async drain(): Promise<void> {
    try {
      // Kills asked for in the same turn of the loop (a burst of terminates, a session's end) go together.
      await yieldToLoop();
      for (let batch = 0; this.queued.size > 0 && batch < 1_000_000; batch++) {
        const roots = [...this.queued].map(([pid, alive]) => ({ pid, alive }));
        this.queued.clear();
        await killBatch(roots);
      }
    } finally {
      this.running = undefined;
      if (this.queued.size > 0) this.running = this.drain();
    }
  }
}

/** A root being killed: whether its leader is still our unreaped child is asked at every scan (the kill reaps it on the way). */
interface KillRoot {
  pid: number;
  alive: () => boolean;
}

/** Signals the group `-pid` only while it may be ours (see `reapedGroupIsOurs`). */
function signalGroup(r: KillRoot, sig: NodeJS.Signals): void {
  if (r.alive() || reapedGroupIsOurs(r.pid)) signal(-r.pid, sig);
}

async function killBatch(roots: KillRoot[]): Promise<void> {
  for (const r of roots) signalGroup(r, 'SIGSTOP');
  const stopped = new Set<number>();
  const killed = new Set<number>();
  for (let pass = 0; pass < KILL_PASSES; pass++) {
    let members: number[] = [];
    for (let round = 0; round < FREEZE_ROUNDS; round++) {
      // Asked at each scan: the kill reaps the leader on the way, and from then on its pid tells
      // nothing about ours.
      const now = roots.map((r) => ({ pid: r.pid, leaderAlive: r.alive() }));
      const procs = await scanProcesses();
      const zombies = new Set(procs.filter((p) => p.zombie).map((p) => p.pid));
      members = [...collectTrees(now, procs)].filter((pid) => !zombies.has(pid));
      const fresh = members.filter((pid) => !stopped.has(pid));
      if (fresh.length === 0) break;
      for (const pid of fresh) {
        signal(pid, 'SIGSTOP');
        stopped.add(pid);
      }
    }
    // Killed members may not be zombies yet; only one never killed calls for another pass.
    const toKill = members.filter((pid) => !killed.has(pid));
    if (toKill.length === 0) break;
    for (const pid of toKill) {
      signal(pid, 'SIGKILL');
      killed.add(pid);
    }
  }
  // Members that left every parent link (a reparented child of the group) die with the group.
  for (const r of roots) signalGroup(r, 'SIGKILL');
}

const killer = new TreeKiller();

/**
 * Kills the whole tree of `rootPid` with SIGKILL so that nothing survives (see `TreeKiller`).
 * Returns at once; the kill runs on the next turns of the event loop, and the promise resolves when
 * it is done (every member found was sent SIGKILL and can run no more). `leaderAlive` says, when
 * the kill runs, whether `rootPid` is still our unreaped child: a reaped pid may name someone
 * else by then, so only its process group and session are used.
 */
export function killTree(rootPid: number, leaderAlive: () => boolean = () => true): Promise<void> {
  return killer.kill(rootPid, leaderAlive);
}

/** Resolves once every `killTree` asked for so far has finished (server shutdown waits for it). */
export function treesKilled(): Promise<void> {
  return killer.idle();
}
