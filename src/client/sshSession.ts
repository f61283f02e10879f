import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { MAX_ANSWER_BYTES } from '../rpc';
import { socketAccepts } from '../util';
import { RelayConnection } from './relayConnection';
import type { AskpassSession } from './sshAskpass';
import { bundleFor, localUname, remoteCommand, type Bundle } from './sshBootstrap';
import type { RemoteInfo, SshConnectorOptions } from './sshConnector';
import { describeSshFailure, SshConnectError } from './sshFailure';
import {
  clearStaleForward,
  connectThroughForward,
  DaemonToken,
  forwardPath,
  masterPidOf,
  RemoteDaemonState,
  readRecord,
  runSsh,
  SHARED_PATH_MS,
  writeRecord,
  type ShareDir,
  type Sharing,
} from './sshShare';
import type { Connection } from './types';

/** What carries a connection: our ssh child (a relay), or a shared master (a forward). */
export type SshVia = { child: ChildProcess } | { masterPid: number | undefined };

/** What a session reads from its connector (./sshConnector.ts), and what it tells it. */
export interface SshSessionOwner {
  readonly options: SshConnectorOptions;
  readonly sshPath: string;
  /** What the last successful connection found on the remote. */
  remote: RemoteInfo | undefined;
  via: SshVia | undefined;
  /** The user cancelled a prompt: recovery's attempts fail at once for a while. */
  cancelled: { at: number; error: SshConnectError } | undefined;
  log(line: string): void;
  /** The argv of an ssh to the destination (`extra` before the destination). */
  argsFor(sharing: Sharing, command: string | undefined, askpass: boolean, extra?: string[]): string[];
  /** A daemon's state as the remote reported it, as RemoteInfo (what is missing from the last connection's). */
  infoOf(st: { pid: number; platform?: string; node?: string; nodeVersion?: string }, version: string): RemoteInfo;
}

/** What one session starts from: the attempt's choices. */
export interface SshSessionStart {
  signal: AbortSignal;
  ask: AskpassSession | undefined;
  onCancel: ((hook: (prompt: string) => void) => void) | undefined;
  bundle: Bundle;
  env: NodeJS.ProcessEnv;
  share: ShareDir | string;
  sharing: Sharing;
  /** The shared master answered just now. */
  masterUp: boolean;
}

/** A path ssh's `-L local:remote` can take (it splits at ':'). */
const FORWARDABLE = /^\/[^:\s%]*$/;

/** The attempt through a shared master got no first line within SHARED_PATH_MS. */
export class StuckMaster extends Error {
  constructor() {
    super(`the shared ssh connection did not answer within ${SHARED_PATH_MS} ms`);
  }
}

/**
 * One ssh process of a connection attempt and the lines of its remote command (./sshBootstrap.ts):
 * the probe, the install (the bundle goes up its stdin), then either the relay on its stdio
 * (`EB-READY`) or, on a shared connection, the daemon's socket forwarded by the master
 * (`EB-DAEMON`). Settles once: with the connection, or with the failure in the user's words.
 */
export class SshSession {
  private settled = false;
  private child: ChildProcess | undefined;
  private bundle: Bundle;
  /** The share directory when this session goes through a shared connection. */
  private readonly shared: ShareDir | undefined;
  /** A known daemon socket, forwarded by this same ssh (inline -L: no `-O forward` round trip after). */
  private readonly inline: string | undefined;
  private firstLineTimer: NodeJS.Timeout | undefined;
  private probe: { platform: string; nodePath: string; nodeVersion: string } | undefined;
  private installed = false;
  private stderr = '';
  private buf: Buffer = Buffer.alloc(0);
  private resolve: (c: Connection) => void = () => undefined;
  private reject: (e: Error) => void = () => undefined;

  constructor(
    private readonly owner: SshSessionOwner,
    private readonly start: SshSessionStart,
  ) {
    this.bundle = start.bundle;
    this.shared = start.sharing.kind !== 'none' && typeof start.share !== 'string' ? start.share : undefined;
    const known = this.shared ? readRecord(this.shared, this.bundle.version) : undefined;
    this.inline = known && FORWARDABLE.test(known.socket) ? known.socket : undefined;
  }

  private get target(): string {
    return this.owner.options.target;
  }

  /** Starts the ssh process; resolves with the connection, rejects with what went wrong. */
  run(): Promise<Connection> {
    return new Promise<Connection>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      const { signal, sharing, masterUp, onCancel } = this.start;
      const command = remoteCommand(this.bundle.version, this.owner.options.relayArgs, !!this.shared);
      if (this.shared) mkdirSync(this.shared.dir, { recursive: true, mode: 0o700 });
      this.owner.log(
        `connecting (version ${this.bundle.version}${sharing.kind === 'none' ? '' : `, ${sharing.kind === 'ours' ? 'our' : 'your'} shared connection ${sharing.controlPath}${masterUp ? ', up' : ''}`})`,
      );
      signal.addEventListener('abort', this.onAbort, { once: true });
      // Through a master that is up the first line comes at once; a stuck one never sends it.
      this.firstLineTimer = masterUp ? setTimeout(() => this.fail(new StuckMaster()), SHARED_PATH_MS) : undefined;
      onCancel?.((prompt) => {
        const error = new SshConnectError('auth', `logging in to ${this.target} was cancelled (ssh asked "${prompt}")`);
        this.owner.cancelled = { at: Date.now(), error };
        this.fail(error);
      });
      void this.spawnArgs(command).then(
        (args) => {
          if (this.settled) return;
          const child = spawn(this.owner.sshPath, args, { env: this.start.env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
          this.child = child;
          this.owner.via = { child };
          this.watch(child);
        },
        (e: Error) => this.fail(e),
      );
    });
  }

  /** ssh's argv: with the known daemon socket forwarded inline when there is one. */
  private async spawnArgs(command: string): Promise<string[]> {
    const argv = (extra: string[]) => this.owner.argsFor(this.start.sharing, command, !!this.start.ask, extra);
    if (!this.inline || !this.shared) return argv([]);
    const fwd = forwardPath(this.shared, this.inline);
    await clearStaleForward(fwd);
    return argv(['-L', `${fwd}:${this.inline}`]);
  }

  private readonly onAbort = () => this.fail(new Error(`connecting to ${this.target} over ssh timed out`));

  private fail(e: Error): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.firstLineTimer);
    this.start.signal.removeEventListener('abort', this.onAbort);
    this.child?.kill('SIGKILL');
    this.owner.log(e.message);
    this.reject(e);
  }

  /** A connection is there: nothing fails the session any more, and the attempt no longer times out. */
  private settle(): void {
    this.settled = true;
    this.start.signal.removeEventListener('abort', this.onAbort);
  }

  private watch(child: ChildProcess): void {
    child.stdin!.on('error', () => undefined);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      this.stderr = (this.stderr + d).slice(-8192);
      for (const line of d.split('\n')) if (line.trim()) this.owner.log(`[stderr] ${line.trim()}`);
    });
    child.once('error', (e: NodeJS.ErrnoException) =>
      this.fail(
        e.code === 'ENOENT'
          ? new SshConnectError(
              'no-ssh',
              `no ssh client found (${this.owner.sshPath}): install OpenSSH (e.g. apt install openssh-client) or set its path`,
            )
          : e,
      ),
    );
    child.once('exit', (code) => this.onExit(code));
    child.stdout!.on('data', this.onData);
  }

  /** ssh exited before the session settled: what the probe found says why, else ssh's own words. */
  private onExit(code: number | null): void {
    if (this.settled) return;
    const probe = this.probe;
    const failure = () => describeSshFailure(this.target, this.stderr, code, this.start.ask, this.owner.options.sshOptions);
    if (probe === undefined || code === 255) return this.fail(failure());
    if (!/^(Linux|Darwin) /.test(probe.platform))
      return this.fail(
        new SshConnectError('platform', `${this.target} runs ${probe.platform || 'an unknown system'}: SSH executors need Linux or macOS`),
      );
    if (!probe.nodePath)
      return this.fail(
        new SshConnectError(
          'no-node',
          `${this.target} has no Node.js on the PATH of a non-interactive login: install Node.js 20 or newer there`,
        ),
      );
    if (!/^v([2-9]\d|[1-9]\d\d)\./.test(probe.nodeVersion))
      return this.fail(
        new SshConnectError(
          'old-node',
          `${this.target} has Node.js ${probe.nodeVersion || '(unknown version)'} at ${probe.nodePath}: Exec Bridge needs 20 or newer`,
        ),
      );
    this.fail(failure());
  }

  /** The remote command's stdout, in lines until the last of ours; after `EB-READY` the same pipe is the relay. */
  private readonly onData = (d: Buffer): void => {
    const child = this.child!;
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    for (;;) {
      const i = this.buf.indexOf(10);
      if (i < 0) return;
      const line = this.buf.subarray(0, i).toString('utf8');
      this.buf = this.buf.subarray(i + 1);
      if (!this.onLine(line)) {
        child.stdout!.off('data', this.onData);
        if (this.settled) return;
        if (!line.startsWith('EB-READY')) return;
        this.becomeRelay(child);
        return;
      }
    }
  };

  /** The relay is up on ssh's stdio: what followed the ready line is its first data. */
  private becomeRelay(child: ChildProcess): void {
    this.settle();
    child.stdout!.pause();
    if (this.buf.length) child.stdout!.unshift(this.buf);
    const transport = new RelayConnection(child.stdout!, child.stdin!, MAX_ANSWER_BYTES);
    transport.onClose(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    });
    child.once('exit', (code, sig) => transport.close(`ssh to ${this.target} exited (${sig ?? code})`));
    child.stdout!.resume();
    this.resolve(transport);
  }

  /** One line of the remote command; false once no more of ours follow (ready, or failed). */
  private onLine(line: string): boolean {
    const options = this.owner.options;
    const [word, ...rest] = line.split(' ');
    const arg = rest.join(' ');
    if (word?.startsWith('EB-')) clearTimeout(this.firstLineTimer);
    switch (word) {
      case 'EB-DAEMON':
        options.progress?.({ step: 'starting' });
        void this.throughForward(arg).catch((e: Error) => this.relayInstead(`the forward failed (${e.message})`));
        return true;
      case 'EB-PROBE': {
        const [platform = '', nodePath = '', nodeVersion = ''] = arg.split('|');
        this.probe = { platform, nodePath, nodeVersion };
        this.owner.log(`${platform}, node ${nodeVersion || 'none'} ${nodePath}`);
        if (this.owner.remote === undefined && platform !== localUname())
          this.bundle = bundleFor(options.cliPath, options.nodePtyDir, platform);
        return true;
      }
      case 'EB-HAVE':
        options.progress?.({ step: 'starting' });
        this.owner.log(`exec-server ${this.bundle.version} is installed; starting`);
        return true;
      case 'EB-SEND':
        this.upload();
        return true;
      case 'EB-INSTALLED':
        options.progress?.({ step: 'starting' });
        this.owner.log(`installed ${arg}; starting`);
        return true;
      case 'EB-ERROR':
        this.fail(installFailure(this.target, rest));
        return false;
      case 'EB-READY':
        this.owner.remote = {
          platform: this.probe?.platform ?? '',
          nodePath: this.probe?.nodePath ?? '',
          nodeVersion: this.probe?.nodeVersion ?? '',
          version: this.bundle.version,
          installed: this.installed,
          daemonPid: Number(arg),
        };
        options.progress?.({ step: 'ready', info: this.owner.remote });
        this.owner.log(`relay ready (daemon pid ${arg})`);
        return false;
      default:
        this.owner.log(`[remote] ${line}`);
        return true;
    }
  }

  /** `EB-SEND`: the remote lacks this version; the bundle goes up ssh's stdin. */
  private upload(): void {
    const options = this.owner.options;
    const payload = this.bundle.payload();
    const platform = this.probe?.platform ?? '?';
    options.progress?.({ step: 'installing', version: this.bundle.version, bytes: payload.length });
    this.owner.log(`installing exec-server ${this.bundle.version} (${payload.length} bytes, ${this.bundle.files.length} files)`);
    this.owner.log(
      this.bundle.ptyFrom
        ? `node-pty for ${platform} from ${this.bundle.ptyFrom}`
        : `no node-pty build for ${platform} here: commands run, terminals (PTYs) will not`,
    );
    this.child!.stdin!.write(payload);
    this.installed = true;
  }

  private relayInstead(why: string): void {
    this.owner.log(`${why}: the relay of this same session instead`);
    this.child!.stdin!.write('relay\n');
  }

  /** The fast path's answer: reach the daemon through a forward on the master, else go on as a relay. */
  private async throughForward(text: string): Promise<void> {
    const m = /^(\S+) (\{.*\})$/.exec(text);
    const token = DaemonToken.safeParse(m?.[1]);
    let state: ReturnType<typeof RemoteDaemonState.safeParse> | undefined;
    try {
      state = RemoteDaemonState.safeParse(JSON.parse(m?.[2] ?? ''));
    } catch {
      state = undefined;
    }
    const shared = this.shared;
    if (!shared || !token.success || !state?.success || state.data.key !== this.bundle.version || !FORWARDABLE.test(state.data.socket))
      return this.relayInstead('the daemon it reported cannot be forwarded');
    const st = state.data;
    const { sharing, env, signal } = this.start;
    const fwd = forwardPath(shared, st.socket);
    if (this.inline !== st.socket) {
      await clearStaleForward(fwd);
      const r = await runSsh(
        this.owner.sshPath,
        this.owner.argsFor(sharing, undefined, true, ['-O', 'forward', '-L', `${fwd}:${st.socket}`]),
        env,
        SHARED_PATH_MS,
      );
      if (r.code !== 0) this.owner.log(`ssh -O forward: ${r.stderr.trim() || `exit ${r.code ?? 'timed out'}`}`);
    }
    const conn = await connectThroughForward(fwd, token.data, signal);
    // The forward must live in a master that outlives this session (a session that is no mux client takes its forwards with it).
    const master = 'ok' in conn && (await socketAccepts(sharing.kind === 'none' ? '' : sharing.controlPath));
    if (this.settled) {
      if ('ok' in conn) conn.ok.close('the attempt ended');
      return;
    }
    if (!('ok' in conn)) return this.relayInstead(`the forward to the daemon did not connect (${conn.error.message})`);
    if (!master) {
      conn.ok.close('no master');
      return this.relayInstead('no master carries the forward');
    }
    this.settle();
    // End of input: the remote sh ends this session; the master stays for the next connection.
    this.child!.stdin!.end();
    this.keepForward(shared, st, token.data);
    this.owner.log(`reached the daemon (pid ${st.pid}) through a forward on the shared connection`);
    this.resolve(conn.ok);
  }

  /** The connection goes through the master: the daemon is recorded for the next connection's warm path. */
  private keepForward(shared: ShareDir, st: { key: string; socket: string; pid: number }, token: string): void {
    const remote = this.owner.infoOf(st, this.bundle.version);
    this.owner.remote = remote;
    const carried = { masterPid: undefined as number | undefined };
    this.owner.via = carried;
    const rec = { key: st.key, socket: st.socket, token, ...remoteFields(remote), pid: st.pid };
    const keep = () => {
      try {
        writeRecord(shared, { ...rec, ...(carried.masterPid ? { masterPid: carried.masterPid } : {}) });
      } catch (e) {
        this.owner.log(`cannot record the daemon for the next connection: ${(e as Error).message}`);
      }
    };
    keep();
    // Which process the master is (sshPid), learned beside the connection's first calls rather than before them.
    void runSsh(
      this.owner.sshPath,
      this.owner.argsFor(this.start.sharing, undefined, true, ['-O', 'check']),
      this.start.env,
      SHARED_PATH_MS,
    ).then((check) => {
      carried.masterPid = masterPidOf(check);
      if (carried.masterPid) keep();
    });
    this.owner.options.progress?.({ step: 'ready', info: remote });
  }
}

/** `EB-ERROR what code message…`: the install failed on the remote; the fix for the usual causes. */
function installFailure(target: string, rest: string[]): SshConnectError {
  const [what = '', code = '', ...msg] = rest;
  const text = msg.join(' ');
  const fix =
    code === 'ENOSPC'
      ? ': the remote disk is full; free some space in your home directory'
      : code === 'EACCES' || code === 'EPERM'
        ? ': permission denied in ~/.exec-bridge on the remote; check that your home directory is writable'
        : '';
  return new SshConnectError('install', `${what} on ${target} failed: ${text}${fix}`);
}

function remoteFields(r: RemoteInfo): { platform: string; node: string; nodeVersion: string } {
  return { platform: r.platform, node: r.nodePath, nodeVersion: r.nodeVersion };
}
