import { readdirSync, readFileSync } from 'node:fs';

interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
}

/** Reads pid, ppid, pgid and session of every process from /proc (Linux). */
export function listProcesses(): ProcInfo[] {
  const out: ProcInfo[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp session …": comm may contain spaces and parens; cut at the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.push({ pid, ppid: Number(fields[1]), pgid: Number(fields[2]), sid: Number(fields[3]) });
  }
  return out;
}

/**
 * Every process that belongs to the tree rooted at `rootPid`: its descendants by parent links, and
 * any process in its process group or session (which catches `nohup` children already reparented).
 * A descendant that called `setsid` is still found through the parent links while its parent lives.
 */
export function collectTree(rootPid: number, procs: ProcInfo[] = listProcesses()): number[] {
  const children = new Map<number, number[]>();
  for (const p of procs) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  const found = new Set<number>();
  const queue: number[] = [];
  for (const p of procs) {
    if (p.pid === rootPid || p.pgid === rootPid || p.sid === rootPid) queue.push(p.pid);
  }
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (found.has(pid) || pid === process.pid) continue;
    found.add(pid);
    for (const c of children.get(pid) ?? []) queue.push(c);
  }
  return [...found];
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * Kills the whole tree of `rootPid` with SIGKILL so that nothing survives. The tree is found first
 * (parent links only exist while the parents live: killing the group first would orphan a
 * `setsid` grandchild before we could see it), frozen with SIGSTOP so that no member can fork
 * between scan and kill, then killed. Repeats (bounded) until a scan finds nothing alive.
 */
export function killTree(rootPid: number): void {
  if (process.platform === 'linux') {
    for (let round = 0; round < 8; round++) {
      const pids = collectTree(rootPid).filter((pid) => !isZombie(pid));
      if (pids.length === 0) break;
      signalAll(pids, 'SIGSTOP');
      signalAll([...new Set([...pids, ...collectTree(rootPid)])], 'SIGKILL');
    }
  }
  try {
    process.kill(-rootPid, 'SIGKILL');
  } catch {
    // no such group (already dead, or not a group leader)
  }
}
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}
