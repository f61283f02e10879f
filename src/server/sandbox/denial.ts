import { isAbsolute, resolve } from 'node:path';
import { isWithin } from './policy';

/*
 * "Did the sandbox cause this failure?" — advisory, run once after a sandboxed process exits, over
 * its retained output. It only answers yes on specific evidence that the *applied* policy explains
 * (docs/sandbox.md "Denial heuristic"): a read-only-filesystem error, a permission error on
 * a path the policy blocks, or a network error while the network was off. Launcher errors from
 * bwrap itself are setup failures, never denials. Differences from codex's heuristic: no bare
 * "sandbox"/"seccomp"/"landlock" keywords (they match any output that merely talks about them).
 */

export interface DenialContext {
  /** Writes were restricted (some of the filesystem was read-only). */
  fsRestricted: boolean;
  /** The network was off. */
  networkRestricted: boolean;
  /** The command's cwd, to resolve relative paths in messages. */
  cwd: string;
  /** Writable roots (given and real forms both welcome). */
  writableRoots: string[];
  /** Read-only carve-outs inside writable roots (`.git`, …), existing or placeholders. */
  protectedPaths: string[];
  /**
   * Writable folders above a carve-out, bound onto themselves so that the command cannot rename
   * them (./layout.ts `pinnedFolders`): renaming one fails with EBUSY, a rename into or out of one
   * with EXDEV. Outside the sandbox both work.
   */
  pinnedFolders?: string[];
}

export type DenialKind = 'fs' | 'network' | 'permission';

export type DenialVerdict =
  /** Nothing points at the sandbox (or there was nothing to judge). */
  | { denied: false; kind: 'none' }
  /** The sandbox launcher failed; the command never ran. */
  | { denied: false; kind: 'setup'; evidence: string }
  /** A weak signal (a permission error we cannot tie to the policy, loopback refused): not reported. */
  | { denied: false; kind: 'possible'; evidence: string }
  | { denied: true; kind: DenialKind; evidence: string };

/** Only the end of the output is scanned: the error that ended the run is there. */
const TAIL_BYTES = 64 * 1024;

const RE_EROFS = /read-only file system|\berofs\b/i;
const RE_BUSY = /device or resource busy|\bebusy\b/i;
const RE_EXISTS = /file exists|\beexist\b/i;
/** libc's "Invalid cross-device link" (Python: "[Errno 18] …"), Node's "EXDEV: cross-device link not permitted". */
const RE_XDEV = /cross-device link|\bexdev\b/i;
const RE_PERM = /operation not permitted|\beperm\b|permission denied|\beacces\b/i;
const RE_UNRELATED_PERM = /permission denied \((publickey|password|keyboard-interactive)|sudo:|\bsu:/i;
const RE_CAPABILITY_OP =
  /\b(u?mount|chown|chgrp|setuid|setgid|setgroups|ptrace|unshare|chroot|mknod|capset|sethostname|setns|swapon|reboot)\b/i;
const RE_NETWORK_CONTEXT = /\b(connect|socket|network|https?:\/\/|getaddrinfo|urlopen|tcp|udp|ssl|tls|proxy|registry|fetch|download)\b/i;
const RE_NET_UNREACHABLE = /\benetunreach\b|network is unreachable/i;
const RE_DNS =
  /\beai_again\b|temporary failure in name resolution|could not resolve host|could not resolve hostname|unable to resolve host|\bgetaddrinfo\b|name or service not known|no address associated with hostname|nodename nor servname/i;
const RE_CONNREFUSED = /\beconnrefused\b|connection refused/i;
const RE_CURL = /^curl: \((6|7)\)/i;
const RE_NOT_FOUND = /not found|no such file or directory|cannot execute|exec format error/i;

/** The `n`th strength of a verdict, to keep the strongest piece of evidence. */
const RANK: Record<string, number> = { none: 0, possible: 1, permission: 2, network: 3, fs: 4 };

export function classifyExit(exitCode: number, output: readonly Buffer[] | string, ctx: DenialContext): DenialVerdict {
  if (exitCode === 0 || (!ctx.fsRestricted && !ctx.networkRestricted)) return { denied: false, kind: 'none' };
  const { head, tail } = textOf(output);

  // Step 0: bwrap's own errors ("bwrap: Can't find source path …", "bwrap: execvp x: …") come first.
  const first = head.split('\n').find((l) => l.trim() !== '') ?? '';
  if (first.startsWith('bwrap: ')) return { denied: false, kind: 'setup', evidence: first.trim() };

  let best: DenialVerdict = { denied: false, kind: 'none' };
  const consider = (v: DenialVerdict) => {
    // The strongest kind wins; among equals the latest line (closest to the failure).
    if (RANK[v.kind]! >= RANK[best.kind]! && v.kind !== 'none') best = v;
  };
  const lines = tail.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const paths = () => pathsIn(line, ctx.cwd);
    if (ctx.fsRestricted) {
      if (RE_EROFS.test(line)) return consider({ denied: true, kind: 'fs', evidence: line });
      // A carve-out is a mount point (EBUSY on rename/remove) or a placeholder (EEXIST on create).
      if ((RE_BUSY.test(line) || RE_EXISTS.test(line)) && paths().some((p) => isProtected(p, ctx)))
        return consider({ denied: true, kind: 'fs', evidence: line });
      // A pinned folder renamed or removed (EBUSY), or a rename across one (EXDEV).
      const pins = ctx.pinnedFolders ?? [];
      if (RE_BUSY.test(line) && pathsIn(line, ctx.cwd, true).some((p) => pins.includes(p)))
        return consider({ denied: true, kind: 'fs', evidence: line });
      if (RE_XDEV.test(line) && paths().some((p) => pins.some((q) => isWithin(p, q))))
        return consider({ denied: true, kind: 'fs', evidence: line });
    }
    if (ctx.networkRestricted) {
      if (RE_NET_UNREACHABLE.test(line) || RE_DNS.test(line)) return consider({ denied: true, kind: 'network', evidence: line });
      if (RE_CURL.test(line) && (exitCode === 6 || exitCode === 7)) return consider({ denied: true, kind: 'network', evidence: line });
      if (RE_CONNREFUSED.test(line)) {
        // The sandbox has its own empty loopback: "refused" on 127.0.0.1 also happens when nothing listens.
        const loopback = /\b(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])\b/i.test(line);
        return consider(loopback ? { denied: false, kind: 'possible', evidence: line } : { denied: true, kind: 'network', evidence: line });
      }
    }
    if (RE_PERM.test(line) && !RE_UNRELATED_PERM.test(line)) {
      const context = lines.slice(Math.max(0, i - 3), i + 1).join('\n');
      if (ctx.fsRestricted && paths().some((p) => isWriteBlocked(p, ctx)))
        return consider({ denied: true, kind: 'permission', evidence: line });
      if (ctx.networkRestricted && RE_NETWORK_CONTEXT.test(context)) return consider({ denied: true, kind: 'network', evidence: line });
      if (RE_CAPABILITY_OP.test(line)) return consider({ denied: true, kind: 'permission', evidence: line });
      return consider({ denied: false, kind: 'possible', evidence: line });
    }
    return undefined;
  });
  if (best.denied) return best;
  // "command not found" / "cannot execute" are the command's own problem.
  if ((exitCode === 126 || exitCode === 127) && RE_NOT_FOUND.test(tail)) return { denied: false, kind: 'none' };
  return best;
}

function isProtected(p: string, ctx: DenialContext): boolean {
  return ctx.protectedPaths.some((q) => isWithin(p, q));
}

/** Writing `p` is refused by the policy: outside every writable root, or inside a carve-out. */
function isWriteBlocked(p: string, ctx: DenialContext): boolean {
  return isProtected(p, ctx) || !ctx.writableRoots.some((w) => isWithin(p, w));
}

/**
 * Paths named in a message: quoted ones ('x', "x", ‘x’, `x') and bare absolute ones. `anyQuoted`:
 * every quoted word is a path (`mv: cannot move 'sub' …`), for checks against exact folders.
 */
export function pathsIn(line: string, cwd: string, anyQuoted = false): string[] {
  const out = new Set<string>();
  for (const m of line.matchAll(/['"‘’`“”]([^'"‘’`“”\n]{1,4096})['"‘’`“”]/g)) {
    const s = m[1]!;
    if (anyQuoted || /^[./~]|\//.test(s) || /^\.[\w-]+$/.test(s)) out.add(s);
  }
  // Bare absolute paths; `//` is the middle of a URL (https://…), not a path.
  for (const m of line.matchAll(/(?:^|[\s:=(,])(\/(?!\/)[^\s'"‘’`“”,:)]*)/g)) out.add(m[1]!);
  return [...out].filter((s) => !/^[a-z]+:\/\//i.test(s) && !s.startsWith('~')).map((s) => (isAbsolute(s) ? resolve(s) : resolve(cwd, s)));
}

function textOf(output: readonly Buffer[] | string): { head: string; tail: string } {
  if (typeof output === 'string') return { head: clean(output.slice(0, 4096)), tail: clean(output.slice(-TAIL_BYTES)) };
  const total = output.reduce((n, b) => n + b.length, 0);
  const all = Buffer.concat(output as Buffer[], total);
  return {
    head: clean(all.subarray(0, 4096).toString('utf8')),
    tail: clean(all.subarray(Math.max(0, total - TAIL_BYTES)).toString('utf8')),
  };
}

/** Strips terminal escapes and carriage returns (PTY output). */
function clean(s: string): string {
  return s
    .replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b\][^\x07]*\x07/g, '')
    .replace(/\r/g, '');
}
