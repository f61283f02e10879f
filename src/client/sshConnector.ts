import { existsSync } from 'node:fs';
import { socketAccepts } from '../util';
import { startAskpass, type AskpassHandler, type AskpassSession } from './sshAskpass';
import { bundleFor, localUname } from './sshBootstrap';
import type { SshConnectError } from './sshFailure';
import { SshSession, StuckMaster, type SshSessionOwner, type SshVia } from './sshSession';
import {
  connectThroughForward,
  decideSharing,
  forwardPath,
  readRecord,
  runSsh,
  SHARED_PATH_MS,
  shareDirFor,
  type Sharing,
} from './sshShare';
import { parseSshTarget, sshArgs, type SshTarget } from './sshTarget';
import type { Connection, Connector } from './types';

export { remoteCommand } from './sshBootstrap';
export { describeSshFailure, SshConnectError, type SshFailureKind } from './sshFailure';
export { parseSshTarget, removeHostKeyCommand, sshArgs, sshCommandLine, type SshTarget } from './sshTarget';
export { RelayConnection } from './relayConnection';

/*
 * SSH executors: each connection is one `ssh` process (the system OpenSSH client; BatchMode, or
 * with `askpass` its prompts forwarded to the caller, see sshAskpass) whose
 * remote command probes the platform and Node, installs our bundle if that version is missing
 * (uploaded through the same connection's stdin), then becomes `exec-bridge connect`, a relay to
 * the remote user's daemon. A reconnect is a new ssh process and a new relay to the same daemon,
 * so the client resumes its session. Here: the connector and its attempts (the warm path, the
 * sharing decision); one ssh process and its lines: ./sshSession.ts; the destination and ssh's
 * argv: ./sshTarget.ts; failures in the user's words: ./sshFailure.ts.
 */

export type SshProgress =
  | { step: 'connecting'; target: string }
  | { step: 'installing'; version: string; bytes: number }
  | { step: 'starting' }
  | { step: 'ready'; info: RemoteInfo };

export interface RemoteInfo {
  /** `uname -sm`, e.g. `Linux x86_64`. */
  platform: string;
  nodePath: string;
  nodeVersion: string;
  /** The installed bundle's version key. */
  version: string;
  /** Whether this connection uploaded it. */
  installed: boolean;
  daemonPid: number;
}

export interface SshConnectorOptions {
  /** `[user@]host[:port]`; a host may be a `Host` alias of ~/.ssh/config. */
  target: string;
  /** Each is passed as `-o OPT`. */
  sshOptions?: string[];
  /** Default `ssh` on PATH. */
  sshPath?: string;
  /** The bundle to install: `dist/cli.js` (node-pty is taken from beside it when the remote platform matches ours). */
  cliPath: string;
  /** node-pty's package folder to ship for PTYs (default: resolved from the bundle's node_modules); null: none. */
  nodePtyDir?: string | null;
  /** Extra `exec-bridge connect` arguments (e.g. `--idle-exit-ms N`). */
  relayArgs?: string[];
  env?: NodeJS.ProcessEnv;
  /**
   * Where ssh's password and passphrase prompts go (the editor's input box). Without it ssh runs
   * with BatchMode=yes and such prompts are refused. Host-key confirmations never reach it.
   */
  askpass?: AskpassHandler;
  log?(line: string): void;
  progress?(p: SshProgress): void;
}

/** After the user cancels a prompt, this long without asking again (a recovery's retries fail at once). */
const CANCEL_QUIET_MS = 30_000;

export interface SshConnector extends Connector {
  /** What the last successful connection found on the remote. */
  readonly remote: RemoteInfo | undefined;
  /** The current ssh process's pid (tests kill it). */
  readonly sshPid: number | undefined;
}

/** A connector that reaches the remote daemon through a shared ssh connection, else a new ssh process (see the file comment). */
export function sshConnector(options: SshConnectorOptions): SshConnector {
  const destination = new SshDestination(options);
  return Object.defineProperties((signal: AbortSignal) => destination.connect(signal), {
    remote: { get: () => destination.remote },
    sshPid: { get: () => destination.sshPid },
  }) as SshConnector;
}

/** No connection sharing (the `ssh -G` that decides it runs without ours). */
const NO_SHARING: Sharing = { kind: 'none', why: '', options: [] };

const CONTROL_OPTION = /^\s*control(path|master|persist)\s*[=\s]/i;

/** One connector's destination and what it keeps across attempts: what the remote is, what carries the connection, a cancelled prompt. */
class SshDestination implements SshSessionOwner {
  readonly sshPath: string;
  private readonly target: SshTarget;
  private readonly sshOptions: string[];
  remote: RemoteInfo | undefined;
  via: SshVia | undefined;
  cancelled: { at: number; error: SshConnectError } | undefined;

  constructor(readonly options: SshConnectorOptions) {
    this.target = parseSshTarget(options.target);
    this.sshPath = options.sshPath ?? 'ssh';
    this.sshOptions = options.sshOptions ?? [];
  }

  /** The current ssh process's pid: the master's for a forward, our child's for a relay while it runs. */
  get sshPid(): number | undefined {
    const via = this.via;
    if (via && 'masterPid' in via) return via.masterPid;
    const c = via?.child;
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
  }

  log(line: string): void {
    this.options.log?.(`ssh ${this.options.target}: ${line}`);
  }

  async connect(signal: AbortSignal): Promise<Connection> {
    const options = this.options;
    if (this.cancelled && Date.now() - this.cancelled.at < CANCEL_QUIET_MS) throw this.cancelled.error;
    // The helper is a sh script on a unix socket: on Windows ssh keeps BatchMode (prompts refused).
    if (!options.askpass || process.platform === 'win32') return this.attempt(signal, undefined);
    let onCancel: (prompt: string) => void = () => undefined;
    const ask = await startAskpass({
      cliPath: options.cliPath,
      handler: options.askpass,
      onCancel: (prompt) => onCancel(prompt),
      log: (line) => options.log?.(line),
      ...(options.env ? { env: options.env } : {}),
    });
    try {
      return await this.attempt(signal, ask, (hook) => (onCancel = hook));
    } finally {
      ask.close();
    }
  }

  /** The argv of an ssh to our destination (`extra` before the destination: `-G`, `-O check`, `-L …`). */
  argsFor(sharing: Sharing, command: string | undefined, askpass: boolean, extra: string[] = []): string[] {
    return sshArgs(
      this.target,
      sharing.kind === 'theirs'
        ? this.sshOptions
        : sharing.kind === 'none' && sharing.options.length > 0
          ? // Around a stuck master: the user's own Control* options would lead ssh back to it.
            [...this.sshOptions.filter((o) => !CONTROL_OPTION.test(o)), ...sharing.options]
          : [...this.sshOptions, ...sharing.options],
      command,
      askpass,
      extra,
    );
  }

  infoOf(st: { pid: number; platform?: string; node?: string; nodeVersion?: string }, version: string): RemoteInfo {
    return {
      platform: st.platform ?? this.remote?.platform ?? '',
      nodePath: st.node ?? this.remote?.nodePath ?? '',
      nodeVersion: st.nodeVersion ?? this.remote?.nodeVersion ?? '',
      version,
      installed: false,
      daemonPid: st.pid,
    };
  }

  private async attempt(
    signal: AbortSignal,
    ask: AskpassSession | undefined,
    onCancel?: (hook: (prompt: string) => void) => void,
  ): Promise<Connection> {
    const options = this.options;
    const env = { ...(options.env ?? process.env), ...ask?.env };
    options.progress?.({ step: 'connecting', target: options.target });
    const share = shareDirFor(this.sshPath, this.target, this.sshOptions, options.env ?? process.env);
    const decide = () => decideSharing(this.sshPath, this.argsFor(NO_SHARING, undefined, true, ['-G']), this.sshOptions, share, env);
    // No master of ours: no warm path through it either, so ssh -G runs while the bundle is hashed.
    const early = typeof share === 'string' || !(await socketAccepts(share.ctl)) ? decide() : undefined;
    // The upload decides the version; node-pty joins only for a remote of our platform (known after the first probe).
    const bundle = bundleFor(options.cliPath, options.nodePtyDir, this.remote?.platform ?? localUname());
    // Warm: a forward to this version's daemon is up on a live master: no ssh process at all.
    const record = typeof share === 'string' ? undefined : readRecord(share, bundle.version);
    let stuck = false;
    if (record && typeof share !== 'string') {
      const fwd = forwardPath(share, record.socket);
      const r = existsSync(fwd) ? await connectThroughForward(fwd, record.token, signal) : undefined;
      if (r && 'ok' in r) {
        this.remote = this.infoOf(record, bundle.version);
        this.via = { masterPid: record.masterPid };
        options.progress?.({ step: 'starting' });
        options.progress?.({ step: 'ready', info: this.remote });
        this.log(`reached the daemon (pid ${record.pid}) through the shared connection's forward`);
        return r.ok;
      }
      if (r)
        this.log(
          `the shared connection's forward did not answer (${r.stale ? 'its master is gone' : r.stuck ? 'stuck' : r.error.message})`,
        );
      stuck = !!r?.stuck;
    }
    if (signal.aborted) throw new Error(`connecting to ${options.target} over ssh timed out`);
    let sharing = await (early ?? decide());
    if (sharing.kind === 'none') this.log(`no shared connection: ${sharing.why}`);
    if (stuck) sharing = await this.goAround(sharing, env);
    const session = (sharing: Sharing, masterUp: boolean) =>
      new SshSession(this, { signal, ask, onCancel, bundle, env, share, sharing, masterUp }).run();
    try {
      return await session(sharing, sharing.kind !== 'none' && (await socketAccepts(sharing.controlPath)));
    } catch (e) {
      if (!(e instanceof StuckMaster) || sharing.kind === 'none') throw e;
      return await session(await this.goAround(sharing, env), false);
    }
  }

  /**
   * A master that hangs (a dead network it has not noticed yet): this attempt goes without it (a
   * connection of its own); ours is told to exit so that the next connection makes a fresh one.
   * The user's own master is theirs to end.
   */
  private async goAround(sharing: Sharing, env: NodeJS.ProcessEnv): Promise<Sharing> {
    if (sharing.kind === 'none') return sharing;
    this.log(`the shared connection (${sharing.controlPath}) did not answer within ${SHARED_PATH_MS} ms: connecting without it this once`);
    if (sharing.kind === 'ours') {
      const r = await runSsh(this.sshPath, this.argsFor(sharing, undefined, true, ['-O', 'exit']), env, SHARED_PATH_MS);
      this.log(`asked the stuck master to exit (${r.code === 0 ? 'done' : r.stderr.trim() || 'no answer'})`);
    }
    return { kind: 'none', why: 'a stuck master', options: ['ControlMaster=no', 'ControlPath=none'] };
  }
}
