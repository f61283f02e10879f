import { join } from 'node:path';
import { COVER_NAME } from '../../util';
import { argvWithArg0 } from '../spawnPlan';
import { isWithin } from './policy';
import { MINIMAL_PATHS, type Layout } from './layout';
import { BRIDGE_SOCKET_DIR } from './netBridge';

/*
 * Step 3 (Linux): the layout → a bubblewrap argv. Pure, so the exact argv is unit-tested; the
 * integration tests then prove each requirement against the real bwrap.
 */

export interface BwrapOptions {
  layout: Layout;
  network: 'enabled' | 'restricted';
  cwd: string;
  /** The command (argv[0] already resolved to an absolute path by the runner). */
  argv: string[];
  /** Run `argv[0]` with this as its visible argv[0] (bash `exec -a`; bwrap 0.8 has no --argv0). */
  arg0?: string | null;
  /** bwrap is told to read the seccomp program from this fd (network off). */
  seccompFd?: number;
  /** A PTY run keeps the terminal's session (no --new-session), so job control works. */
  tty: boolean;
  /** We run as uid 0: extra hardening that only root needs. */
  asRoot: boolean;
  /**
   * Our private directories (FIFOs, the seccomp program, tokens): each is covered with an empty,
   * inaccessible, read-only tmpfs, last, so no bind above can expose it (docs/security.md).
   */
  hidden?: string[];
  /**
   * Other servers' private directories, which may be removed at any moment: each is covered with
   * its own empty, mode-000 `COVER_NAME` directory (`--ro-bind-try`: skipped if it is gone by then).
   */
  covered?: string[];
  /**
   * Managed network: the proxy's socket directory, bound read-only at BRIDGE_SOCKET_DIR, and the
   * launcher (./netBridge.ts) that runs in front of the command and applies its seccomp filter.
   */
  managedNetwork?: { socketDir: string; launcher: string[] };
  /**
   * Variables bwrap sets for the command (`--setenv`) instead of receiving them: the dynamic
   * loader's, which must not act on the host-side bwrap (see ./hostLaunchEnv.ts).
   */
  setenv?: Array<[string, string]>;
}

/** /proc entries a uid-0 process could write even without capabilities (as Docker masks them). */
const PROC_READ_ONLY = ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs'];

export function bwrapArgs(o: BwrapOptions): string[] {
  const a: string[] = [];
  // Namespaces: own user/pid/ipc/uts/cgroup; bwrap stays PID 1 of the sandbox as the reaper, so a
  // signal death comes back as 128+n and killing bwrap (or its group) ends the whole tree.
  a.push('--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (o.network === 'restricted') a.push('--unshare-net');
  a.push('--die-with-parent');
  // A new session stops TIOCSTI-style injection into the caller's terminal; a PTY run owns its terminal.
  if (!o.tty) a.push('--new-session');

  const { layout } = o;
  if (layout.root === 'ro') a.push('--ro-bind', '/', '/');
  else if (layout.root === 'rw') a.push('--bind', '/', '/');
  else for (const p of MINIMAL_PATHS) a.push('--ro-bind-try', p, p);
  // Fresh minimal /dev (null, zero, random, tty, pts, shm): no host devices, no host /dev/shm.
  a.push('--dev', '/dev');
  a.push('--proc', '/proc');
  // Without these, uid 0 in the sandbox can write kernel.core_pattern (a full escape) or sysrq.
  if (o.asRoot) for (const p of PROC_READ_ONLY) a.push('--ro-bind-try', p, p);
  if (o.managedNetwork) a.push('--ro-bind', o.managedNetwork.socketDir, BRIDGE_SOCKET_DIR);

  for (const m of layout.mounts) {
    switch (m.kind) {
      case 'bind':
        a.push(m.optional ? '--bind-try' : '--bind', m.path, m.path);
        break;
      case 'ro-bind':
        a.push(m.optional ? '--ro-bind-try' : '--ro-bind', m.path, m.path);
        break;
      case 'tmpfs':
        a.push('--tmpfs', m.path);
        break;
      case 'placeholder':
        a.push('--perms', mode(m.mode), '--tmpfs', m.path, '--remount-ro', m.path);
        break;
      case 'deny-dir':
        a.push('--perms', '000', '--tmpfs', m.path, '--remount-ro', m.path);
        break;
      case 'deny-file':
        a.push('--ro-bind', '/dev/null', m.path);
        break;
    }
  }
  for (const p of o.hidden ?? []) if (hostVisible(layout, p)) a.push('--perms', '000', '--tmpfs', p, '--remount-ro', p);
  for (const p of o.covered ?? []) if (hostVisible(layout, p)) a.push('--ro-bind-try', join(p, COVER_NAME), p);
  if (layout.root === 'empty') a.push('--remount-ro', '/');

  // No capabilities: as root, CAP_SYS_ADMIN alone would let it remount the read-only binds writable.
  a.push('--cap-drop', 'ALL');
  // Except, with a managed network, CAP_SETFCAP for the launcher (in bwrap's user namespace): the
  // kernel maps uid 0 in a new user namespace only for a creator that has it, and the launcher
  // moves the command into one of its own (./netBridge.ts). The bridge drops it, the command never has it.
  if (o.managedNetwork) a.push('--cap-add', 'CAP_SETFCAP');
  if (o.seccompFd !== undefined) a.push('--seccomp', String(o.seccompFd));
  a.push('--chdir', o.cwd);
  for (const [k, v] of o.setenv ?? []) a.push('--setenv', k, v);
  a.push('--', ...(o.managedNetwork?.launcher ?? []), ...argvWithArg0(o.argv, o.arg0));
  return a;
}

/** Whether the host's `p` shows through: the deepest mount above it is a bind (or none, over a host root). */
function hostVisible(layout: Layout, p: string): boolean {
  let deepest: Layout['mounts'][number] | undefined;
  for (const m of layout.mounts) if (isWithin(p, m.path) && (!deepest || m.path.length >= deepest.path.length)) deepest = m;
  if (!deepest) return layout.root !== 'empty';
  return deepest.kind === 'bind' || deepest.kind === 'ro-bind';
}

function mode(m: number): string {
  return m.toString(8).padStart(3, '0');
}
