import { homedir, tmpdir } from 'node:os';
import { basename } from 'node:path';
import type { EnvironmentInfo } from '../protocol/environment';
import { uriFromPath } from './uri';

// Replaced by esbuild with package.json's version; unbundled (tsc-compiled tests) it is undefined.
declare const __EXEC_BRIDGE_VERSION__: string | undefined;
export const EXECUTOR_VERSION = `exec-bridge ${typeof __EXEC_BRIDGE_VERSION__ === 'string' ? __EXEC_BRIDGE_VERSION__ : 'dev'}`;

/**
 * `environment/info` (also embedded in `initialize`). The capability keys of the real server are
 * all present (false: we don't implement network proxies, credential masking, …); ours are
 * `processResize` and `concurrentRequests` (see docs/protocol-extensions.md).
 */
export function environmentInfo(opts: { sandbox: boolean }): EnvironmentInfo {
  const shellPath = process.env.SHELL || '/bin/sh';
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
    },
  };
}
