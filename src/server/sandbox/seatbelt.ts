import type { Layout } from './layout';
import { isWithin } from './policy';

/*
 * macOS: a Seatbelt (SBPL) profile for `/usr/bin/sandbox-exec`, generated from the same layout as
 * bwrap's argv. Paths never go into the profile text: each is a `-D NAME=path` parameter read with
 * `(param "NAME")`, so no quoting or regex escaping of user paths is ever needed. In SBPL a later
 * rule wins over an earlier one, which is how carve-outs and denials override the writable roots.
 */

export const SANDBOX_EXEC = '/usr/bin/sandbox-exec';

export interface SeatbeltOptions {
  layout: Layout;
  network: 'enabled' | 'restricted';
  /** Managed proxy: with the network off, still allow these loopback TCP ports (outbound). */
  proxyLoopbackPorts?: number[];
  /** Managed network (codex's `allowLocalBinding`): also bind local ports and talk to anything on loopback. */
  allowLocalBinding?: boolean;
  /** Paths to hide completely (deny entries). */
  deniedPaths?: string[];
  /** Readable roots when the root is not readable (restricted read). */
  readableRoots?: string[];
}

export interface SeatbeltProfile {
  profile: string;
  /** `NAME=value` pairs, passed as `-DNAME=value`. */
  params: Array<[string, string]>;
}

const BASE = `(version 1)
(deny default)

; processes: run and fork, signal and inspect only inside this sandbox
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; what ordinary programs need to start and run
(allow sysctl-read)
(allow file-write-data (require-all (path "/dev/null") (vnode-type CHARACTER-DEVICE)))
(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.cfprefsd.daemon")
  (global-name "com.apple.cfprefsd.agent")
  (global-name "com.apple.PowerManagement.control")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.logd")
  (global-name "com.apple.SecurityServer"))
(allow ipc-posix-sem)
(allow ipc-posix-shm-read* ipc-posix-shm-write-create ipc-posix-shm-write-data ipc-posix-shm-write-unlink)
(allow user-preference-read)
`;

export function seatbeltProfile(o: SeatbeltOptions): SeatbeltProfile {
  const params: Array<[string, string]> = [];
  const param = (name: string, value: string) => {
    params.push([name, value]);
    return `(param "${name}")`;
  };
  const parts: string[] = [BASE];

  parts.push('; reads');
  if (o.layout.root !== 'empty') parts.push('(allow file-read*)');
  else {
    const roots = o.readableRoots ?? [];
    // Restricted read: the listed roots plus what every process needs to start.
    parts.push('(allow file-read-metadata)');
    parts.push(
      `(allow file-read* (subpath "/usr") (subpath "/bin") (subpath "/sbin") (subpath "/System") (subpath "/Library/Apple") (subpath "/private/etc") (subpath "/dev")${roots.map((r, i) => ` (subpath ${param(`READABLE_ROOT_${i}`, r)})`).join('')})`,
    );
  }

  parts.push('; writes: only under writable roots, minus their read-only carve-outs');
  if (o.layout.root === 'rw') parts.push('(allow file-write*)');
  else {
    o.layout.writableRoots.forEach((root, i) => {
      const name = `WRITABLE_ROOT_${i}`;
      const excluded = o.layout.protectedPaths
        .filter((p) => isWithin(p, root))
        .map((p, j) => `(require-not (subpath ${param(`${name}_EXCLUDED_${j}`, p)}))`);
      const rootRef = param(name, root);
      parts.push(
        excluded.length === 0
          ? `(allow file-write* (subpath ${rootRef}))`
          : `(allow file-write* (require-all (subpath ${rootRef}) ${excluded.join(' ')}))`,
      );
    });
  }
  (o.deniedPaths ?? []).forEach((p, i) => parts.push(`(deny file-read* file-write* (subpath ${param(`DENIED_${i}`, p)}))`));

  parts.push('; network');
  if (o.network === 'enabled') {
    parts.push('(allow network-outbound)', '(allow network-inbound)', '(allow system-socket)');
  } else if (o.proxyLoopbackPorts && o.proxyLoopbackPorts.length > 0) {
    // Only the managed proxy's loopback ports: the command reaches the world through it alone.
    const ports = [...new Set(o.proxyLoopbackPorts)].filter((p) => Number.isInteger(p) && p > 0 && p < 65536);
    parts.push(`(allow network-outbound ${ports.map((p) => `(remote ip "localhost:${p}")`).join(' ')})`);
    if (o.allowLocalBinding)
      parts.push(
        '(allow network-bind (local ip "localhost:*"))',
        '(allow network-inbound (local ip "localhost:*"))',
        '(allow network-outbound (remote ip "localhost:*"))',
      );
  } else {
    parts.push('; network off: the default deny applies');
  }
  return { profile: parts.join('\n') + '\n', params };
}

/** The full `sandbox-exec` argv for a command. */
export function seatbeltArgs(p: SeatbeltProfile, argv: string[]): string[] {
  return ['-p', p.profile, ...p.params.map(([k, v]) => `-D${k}=${v}`), '--', ...argv];
}
