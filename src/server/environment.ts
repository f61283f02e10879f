import { homedir, tmpdir, userInfo } from 'node:os';
import { basename } from 'node:path';
import type { EnvironmentInfo } from '../protocol';
import { uriFromPath } from './uri';

// Replaced by esbuild with package.json's version; unbundled (tsc-compiled tests) it is undefined.
declare const __EXEC_BRIDGE_VERSION__: string | undefined;
export const EXECUTOR_VERSION = `exec-bridge ${typeof __EXEC_BRIDGE_VERSION__ === 'string' ? __EXEC_BRIDGE_VERSION__ : 'dev'}`;

/**
 * The user's shell: `$SHELL`, else the login shell of the user database (a server started by
 * systemd, cron or a CI runner often has no `$SHELL`), else `/bin/sh`.
 */
export function userShell(env: NodeJS.ProcessEnv = process.env, loginShell: () => string | null = () => userInfo().shell): string {
  if (env.SHELL) return env.SHELL;
  try {
    const shell = loginShell();
    if (shell && shell.startsWith('/')) return shell;
  } catch {
    // No entry for this uid (a container started with an arbitrary uid): fall through.
  }
  return '/bin/sh';
}

/**
 * `environment/info` (also embedded in `initialize`). The capability keys of the real server are
 * all present (false: we don't implement network proxies, credential masking, …); ours are
 * `processResize` and `concurrentRequests` (see docs/protocol-extensions.md).
 */
export function environmentInfo(opts: { sandbox: boolean }): EnvironmentInfo {
  const shellPath = userShell();
  const tmp = tmpdir();
  return {
    shell: { name: basename(shellPath), path: shellPath },
    executorVersion: EXECUTOR_VERSION,
    providerId: 'exec-bridge',
    cwd: uriFromPath(process.cwd()),
    userHomeDir: uriFromPath(homedir()),
    platformOs: process.platform === 'darwin' ? 'macos' : process.platform,
    prependPathDirs: [],
    temporaryDirectories: [uriFromPath(tmp)],
    tempDir: uriFromPath(tmp),
    capabilities: {
      networkProxyLaunch: false,
      networkProxyReviewDomains: false,
      networkProxyTransparentTcp: false,
      credentialMasking: false,
      credentialMaskingCustomProviders: false,
      capabilityDiscoverySandbox: false,
      fsWatchMissing: false,
      capabilityDiscoveryV2: false,
      environmentConfigRead: false,
      httpHeaderEnvVars: true,
      sandboxedFileStreaming: false,
      fileWriteStreaming: true,
      shellSnapshotV2: false,
      windowsMxc: false,
      linuxRootWritePreservesDevices: false,
      linuxApprovedRootWritePreservesRestrictions: false,
      processResize: true,
      concurrentRequests: true,
      execBridgeSandbox: opts.sandbox,
      // Binary output frames on WebSocket connections whose client asks (src/protocol/binaryOutput.ts).
      execBridgeBinaryOutput: true,
      // process/pause and process/resume (per-process flow control, docs/protocol-extensions.md).
      execBridgeProcessPause: true,
      // process/start.execBridgeCreditWindow and process/ack (credit window, docs/protocol-extensions.md).
      execBridgeProcessCredit: true,
      // initialize {resumeSessionId, execBridgeTakeOver: true} takes a session from a connection that still holds it.
      execBridgeSessionTakeover: true,
      // execBridge/terminalModes: a tty process's modes at an output position (docs/protocol-extensions.md).
      execBridgeTerminalModes: true,
      // execBridge/httpCancel ends a streamed http/request early (docs/protocol-extensions.md).
      execBridgeHttpCancel: true,
    },
  };
}
