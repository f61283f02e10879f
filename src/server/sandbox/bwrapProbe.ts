import { spawn } from 'node:child_process';
import { findSystemTool, isExecutableFile, SYSTEM_DIRS } from '../executables';
import { SandboxUnavailableError } from './errors';

const INSTALL_HINT =
  'install bubblewrap on the executor (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora/RHEL: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`) or point BWRAP_PATH (or `serve --bwrap-path`) at a bwrap binary';

/**
 * The bwrap to run: the one configured (`serve --bwrap-path`, $BWRAP_PATH: the user chose it), else
 * the first in `dirs`. Never the server's PATH: a workspace folder on it (an activated `.venv/bin`)
 * lets a sandboxed command plant a `bwrap` that the next start runs unsandboxed (../executables.ts).
 */
export function findBwrap(explicit?: string, env: NodeJS.ProcessEnv = process.env, dirs: readonly string[] = SYSTEM_DIRS): string {
  const configured = explicit ?? env.BWRAP_PATH;
  if (configured) {
    if (!isExecutableFile(configured))
      throw new SandboxUnavailableError(`the configured bwrap (${configured}) is not an executable file; ${INSTALL_HINT}.`);
    return configured;
  }
  const found = findSystemTool('bwrap', dirs);
  if (found !== undefined) return found;
  throw new SandboxUnavailableError(
    `the sandbox needs bubblewrap (bwrap), which is in none of ${dirs.join(', ')} on the executor (the server's PATH is not searched); ${INSTALL_HINT}.`,
  );
}

/**
 * Runs bwrap once with the namespaces and mounts every sandbox uses. If that fails, no sandboxed
 * command can run here: say why, and how to fix it.
 */
export function probeBwrap(bwrap: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolveProbe, reject) => {
    const args = [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-net',
      '--die-with-parent',
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--cap-drop',
      'ALL',
      '--',
      'true',
    ];
    const child = spawn(bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/bin:/bin' } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new SandboxUnavailableError(`could not run bwrap (${bwrap}): ${e.message}; ${INSTALL_HINT}.`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolveProbe(bwrap);
      reject(new SandboxUnavailableError(explainProbeFailure(stderr.trim() || `exit ${code ?? signal}`)));
    });
  });
}

export function explainProbeFailure(stderr: string): string {
  const s = stderr.toLowerCase();
  let fix: string;
  if (
    /setting up uid map|no permissions to create new namespace|creating new namespace failed|operation not permitted|permission denied/.test(
      s,
    )
  ) {
    fix =
      'user namespaces are not available to this user. Enable them (`sysctl -w kernel.unprivileged_userns_clone=1`, `sysctl -w user.max_user_namespaces=15000`; on Ubuntu 23.10+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or install an AppArmor profile for bwrap), run the exec-server as root, or, inside a container, allow namespaces (Docker: `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`)';
  } else if (/can't mount proc|mount proc|\/proc/.test(s)) {
    fix =
      'bwrap cannot mount a private /proc here (a container with a masked /proc?); run the container with `--privileged` or without /proc masking';
  } else {
    fix = 'check that bwrap works: `bwrap --ro-bind / / --unshare-user --unshare-pid --unshare-net --proc /proc --dev /dev true`';
  }
  return `bubblewrap cannot create a sandbox on this executor (${stderr.split('\n')[0]}): ${fix}.`;
}
