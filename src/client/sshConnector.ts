import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { StdioTransport } from '../rpc/stdioTransport';
import { MAX_ANSWER_BYTES } from '../rpc/transport';
import type { Disposable } from '../util/disposable';
import { shellLine } from '../util/shellQuote';
import { startAskpass, type AskpassHandler, type AskpassSession } from './sshAskpass';
import { bundleFor, localUname, remoteCommand, type Bundle } from './sshBootstrap';
import {
  clearStaleForward,
  connectThroughForward,
  DaemonToken,
  decideSharing,
  forwardPath,
  masterPidOf,
  readRecord,
  RemoteDaemonState,
  runSsh,
  SHARED_PATH_MS,
  shareDirFor,
  writeRecord,
  type ShareDir,
  type Sharing,
} from './sshShare';
import { socketAccepts } from '../util/unixSocket';
import type { Connection, Connector } from './types';
import { sshUserHome } from './sshConfigFiles';

export { remoteCommand } from './sshBootstrap';

/*
 * SSH executors: each connection is one `ssh` process (the system OpenSSH client; BatchMode, or
 * with `askpass` its prompts forwarded to the caller, see sshAskpass) whose
 * remote command probes the platform and Node, installs our bundle if that version is missing
 * (uploaded through the same connection's stdin), then becomes `exec-bridge connect`, a relay to
 * the remote user's daemon. A reconnect is a new ssh process and a new relay to the same daemon,
 * so the client resumes its session.
 */

export interface SshTarget {
  user?: string;
  host: string;
  port?: number;
}

/** `[user@]host[:port]` (an IPv6 host in brackets). Throws a message naming the expected form. */
export function parseSshTarget(text: string): SshTarget {
  const m = /^(?:([^@\s:/]+)@)?(\[[0-9A-Fa-f:.]+\]|[^@\s:/[\]]+)(?::(\d{1,5}))?$/.exec(text.trim());
  if (!m || m[2]!.startsWith('-')) throw new Error(`"${text}" is not an SSH destination: use [user@]host[:port]`);
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`"${text}": port must be 1-65535`);
  return { ...(m[1] ? { user: m[1] } : {}), host: m[2]!.replace(/^\[|\]$/g, ''), ...(port ? { port } : {}) };
}

export type SshFailureKind = 'no-ssh' | 'auth' | 'host-key' | 'unreachable' | 'no-node' | 'old-node' | 'platform' | 'install' | 'other';

/** One failure, worded for the user with the fix. */
export class SshConnectError extends Error {
  constructor(
    readonly kind: SshFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'SshConnectError';
  }
}

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

/**
 * The ssh argv (without the ssh binary): BatchMode first so that no prompt can ever wait for a
 * terminal; `askpass`: no BatchMode, prompts go to SSH_ASKPASS (forced, so never to a terminal either).
 */
export function sshArgs(
  target: SshTarget,
  sshOptions: string[],
  command: string | undefined,
  askpass = false,
  extra: string[] = [],
): string[] {
  const args = askpass ? ['-T'] : ['-T', '-o', 'BatchMode=yes'];
  for (const o of sshOptions) args.push('-o', o);
  args.push('-o', 'ConnectTimeout=10', '-o', 'ServerAliveInterval=5', '-o', 'ServerAliveCountMax=3');
  if (target.port) args.push('-p', String(target.port));
  if (target.user) args.push('-l', target.user);
  args.push(...extra, '--', target.host);
  if (command !== undefined) args.push(command);
  return args;
}

/** The value of `-o Name=value` (or `Name value`) among `sshOptions`, case-insensitive as ssh reads it; the first wins. */
function sshOption(sshOptions: readonly string[], name: string): string | undefined {
  for (const o of sshOptions) {
    const m = /^\s*([A-Za-z]+)\s*(?:=|\s)\s*(.*?)\s*$/.exec(o);
    if (m && m[1]!.toLowerCase() === name.toLowerCase()) return m[2];
  }
  return undefined;
}

/**
 * The `ssh` command a user pastes in a terminal to reach `targetText` as the executor does (our
 * `-o` options, the port as `-p`: `user@host:port` is no ssh syntax), e.g. to accept a host key.
 */
export function sshCommandLine(targetText: string, sshOptions: readonly string[] = []): string {
  const t = parseSshTarget(targetText);
  const argv = ['ssh'];
  for (const o of sshOptions) argv.push('-o', o);
  if (t.port) argv.push('-p', String(t.port));
  argv.push(t.user ? `${t.user}@${t.host}` : t.host);
  return shellLine(argv);
}

/**
 * The command that removes `targetText`'s recorded host key: ssh's own (its warning names the file
 * and the name the key is recorded under), else built as ssh records it (HostKeyAlias, else `host`
 * or `[host]:port`, in the first UserKnownHostsFile of our options).
 */
export function removeHostKeyCommand(targetText: string, sshOptions: readonly string[] = [], stderr = ''): string {
  const own = /^\s*(ssh-keygen -f (['"])[^'"$`\\\n]*\2 -R (['"])[^'"$`\\\n]*\3)\s*$/m.exec(stderr)?.[1];
  if (own) return own;
  const t = parseSshTarget(targetText);
  const alias = sshOption(sshOptions, 'HostKeyAlias');
  const name = alias && alias.toLowerCase() !== 'none' ? alias : t.port && t.port !== 22 ? `[${t.host}]:${t.port}` : t.host;
  const file = sshOption(sshOptions, 'UserKnownHostsFile')
    ?.split(/\s+/)[0]
    ?.replace(/^~(?=\/)/, sshUserHome());
  return shellLine(['ssh-keygen', ...(file ? ['-f', file] : []), '-R', name]);
}

/** ssh's exit without our ready line, as one message with the fix (commands in it work when pasted). */
export function describeSshFailure(
  targetText: string,
  stderr: string,
  code: number | null,
  asked?: { prompts: number },
  sshOptions: readonly string[] = [],
): SshConnectError {
  const err = stderr.trim();
  const last = err.split('\n').slice(-2).join(' ').trim();
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/i.test(err))
    return new SshConnectError(
      'host-key',
      `${targetText}'s host key has CHANGED since it was recorded in known_hosts: this can be an attack. Check with the machine's owner, then remove the old key (${removeHostKeyCommand(targetText, sshOptions, stderr)})`,
    );
  if (/Host key verification failed|No .* host key is known/i.test(err))
    return new SshConnectError(
      'host-key',
      `${targetText}'s host key is not known: connect once in a terminal (${sshCommandLine(targetText, sshOptions)}) to check and accept it, then try again`,
    );
  if (/Permission denied|Too many authentication failures/i.test(err) && asked && asked.prompts > 0)
    return new SshConnectError(
      'auth',
      `ssh could not log in to ${targetText} (${last}): the password or passphrase you entered was not accepted; connect again to retry`,
    );
  if (/Permission denied|Too many authentication failures/i.test(err) && asked)
    return new SshConnectError(
      'auth',
      `ssh could not log in to ${targetText} (${last}): add your key to ssh-agent (ssh-add) or set IdentityFile in ~/.ssh/config`,
    );
  if (/Permission denied|Too many authentication failures/i.test(err))
    return new SshConnectError(
      'auth',
      `ssh could not log in to ${targetText} (${last}): add your key to ssh-agent (ssh-add) or set IdentityFile in ~/.ssh/config; password and passphrase prompts are not supported (BatchMode)`,
    );
  if (/Could not resolve hostname|Connection refused|Connection timed out|No route to host|Network is unreachable/i.test(err))
    return new SshConnectError('unreachable', `cannot reach ${targetText}: ${last}`);
  return new SshConnectError('other', `ssh to ${targetText} failed (exit ${code ?? '?'})${last ? `: ${last}` : ''}`);
}

/** A connector that reaches the remote daemon through a shared ssh connection, else a new ssh process (see the file comment). */
export function sshConnector(options: SshConnectorOptions): SshConnector {
  const target = parseSshTarget(options.target);
  const sshPath = options.sshPath ?? 'ssh';
  const sshOptions = options.sshOptions ?? [];
  let remote: RemoteInfo | undefined;
  /** What carries the current connection: our ssh child (a relay), or a shared master (a forward). */
  let via: { child: ChildProcess } | { masterPid: number | undefined } | undefined;
  const log = (line: string) => options.log?.(`ssh ${options.target}: ${line}`);
  let cancelled: { at: number; error: SshConnectError } | undefined;
  const connector = async (signal: AbortSignal): Promise<Connection> => {
    if (cancelled && Date.now() - cancelled.at < CANCEL_QUIET_MS) throw cancelled.error;
    // The helper is a sh script on a unix socket: on Windows ssh keeps BatchMode (prompts refused).
    if (!options.askpass || process.platform === 'win32') return attempt(signal, undefined);
    let onCancel: (prompt: string) => void = () => undefined;
    const ask = await startAskpass({
      cliPath: options.cliPath,
      handler: options.askpass,
      onCancel: (prompt) => onCancel(prompt),
      log: (line) => options.log?.(line),
      ...(options.env ? { env: options.env } : {}),
    });
    try {
      return await attempt(signal, ask, (hook) => (onCancel = hook));
    } finally {
      ask.close();
    }
  };

  /** The argv of an ssh to our destination (`extra` before the destination: `-G`, `-O check`, `-L …`). */
  const argsFor = (sharing: Sharing, command: string | undefined, askpass: boolean, extra: string[] = []) =>
    sshArgs(
      target,
      sharing.kind === 'theirs'
        ? sshOptions
        : sharing.kind === 'none' && sharing.options.length > 0
          ? // Around a stuck master: the user's own Control* options would lead ssh back to it.
            [...sshOptions.filter((o) => !CONTROL_OPTION.test(o)), ...sharing.options]
          : [...sshOptions, ...sharing.options],
      command,
      askpass,
      extra,
    );

  const infoOf = (st: { pid: number; platform?: string; node?: string; nodeVersion?: string }, version: string): RemoteInfo => ({
    platform: st.platform ?? remote?.platform ?? '',
    nodePath: st.node ?? remote?.nodePath ?? '',
    nodeVersion: st.nodeVersion ?? remote?.nodeVersion ?? '',
    version,
    installed: false,
    daemonPid: st.pid,
  });

  const attempt = async (
    signal: AbortSignal,
    ask: AskpassSession | undefined,
    onCancel?: (hook: (prompt: string) => void) => void,
  ): Promise<Connection> => {
    const env = { ...(options.env ?? process.env), ...ask?.env };
    options.progress?.({ step: 'connecting', target: options.target });
    const share = shareDirFor(sshPath, target, sshOptions, options.env ?? process.env);
    const decide = () => decideSharing(sshPath, argsFor(NO_SHARING, undefined, true, ['-G']), sshOptions, share, env);
    // No master of ours: no warm path through it either, so ssh -G runs while the bundle is hashed.
    const early = typeof share === 'string' || !(await socketAccepts(share.ctl)) ? decide() : undefined;
    // The upload decides the version; node-pty joins only for a remote of our platform (known after the first probe).
    const bundle = bundleFor(options.cliPath, options.nodePtyDir, remote?.platform ?? localUname());
    // Warm: a forward to this version's daemon is up on a live master: no ssh process at all.
    const record = typeof share === 'string' ? undefined : readRecord(share, bundle.version);
    let stuck = false;
    if (record && typeof share !== 'string') {
      const fwd = forwardPath(share, record.socket);
      const r = existsSync(fwd) ? await connectThroughForward(fwd, record.token, signal) : undefined;
      if (r && 'ok' in r) {
        remote = infoOf(record, bundle.version);
        via = { masterPid: record.masterPid };
        options.progress?.({ step: 'starting' });
        options.progress?.({ step: 'ready', info: remote });
        log(`reached the daemon (pid ${record.pid}) through the shared connection's forward`);
        return r.ok;
      }
      if (r)
        log(`the shared connection's forward did not answer (${r.stale ? 'its master is gone' : r.stuck ? 'stuck' : r.error.message})`);
      stuck = !!r?.stuck;
    }
    if (signal.aborted) throw new Error(`connecting to ${options.target} over ssh timed out`);
    let sharing = await (early ?? decide());
    if (sharing.kind === 'none') log(`no shared connection: ${sharing.why}`);
    if (stuck) sharing = await goAround(sharing, env);
    try {
      return await session(
        signal,
        ask,
        onCancel,
        bundle,
        env,
        share,
        sharing,
        sharing.kind !== 'none' && (await socketAccepts(sharing.controlPath)),
      );
    } catch (e) {
      if (!(e instanceof StuckMaster) || sharing.kind === 'none') throw e;
      return await session(signal, ask, onCancel, bundle, env, share, await goAround(sharing, env), false);
    }
  };

  /**
   * A master that hangs (a dead network it has not noticed yet): this attempt goes without it (a
   * connection of its own); ours is told to exit so that the next connection makes a fresh one.
   * The user's own master is theirs to end.
   */
  const goAround = async (sharing: Sharing, env: NodeJS.ProcessEnv): Promise<Sharing> => {
    if (sharing.kind === 'none') return sharing;
    log(`the shared connection (${sharing.controlPath}) did not answer within ${SHARED_PATH_MS} ms: connecting without it this once`);
    if (sharing.kind === 'ours') {
      const r = await runSsh(sshPath, argsFor(sharing, undefined, true, ['-O', 'exit']), env, SHARED_PATH_MS);
      log(`asked the stuck master to exit (${r.code === 0 ? 'done' : r.stderr.trim() || 'no answer'})`);
    }
    return { kind: 'none', why: 'a stuck master', options: ['ControlMaster=no', 'ControlPath=none'] };
  };

  const session = (
    signal: AbortSignal,
    ask: AskpassSession | undefined,
    onCancel: ((hook: (prompt: string) => void) => void) | undefined,
    firstBundle: Bundle,
    env: NodeJS.ProcessEnv,
    share: ShareDir | string,
    sharing: Sharing,
    masterUp: boolean,
  ) =>
    new Promise<Connection>((resolve, reject) => {
      let bundle = firstBundle;
      const shared = sharing.kind !== 'none' && typeof share !== 'string' ? share : undefined;
      const command = remoteCommand(bundle.version, options.relayArgs, !!shared);
      // A known daemon socket is forwarded by this same ssh (inline -L: no `-O forward` round trip after).
      const known = shared ? readRecord(shared, bundle.version) : undefined;
      const inline = known && FORWARDABLE.test(known.socket) ? known.socket : undefined;
      if (shared) mkdirSync(shared.dir, { recursive: true, mode: 0o700 });
      log(
        `connecting (version ${bundle.version}${sharing.kind === 'none' ? '' : `, ${sharing.kind === 'ours' ? 'our' : 'your'} shared connection ${sharing.controlPath}${masterUp ? ', up' : ''}`})`,
      );
      const spawnArgs = (extra: string[]) => argsFor(sharing, command, !!ask, extra);
      const start = async () => {
        if (!inline || !shared) return spawnArgs([]);
        const fwd = forwardPath(shared, inline);
        await clearStaleForward(fwd);
        return spawnArgs(['-L', `${fwd}:${inline}`]);
      };
      let settled = false;
      let child: ChildProcess | undefined;
      const fail = (e: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(firstLineTimer);
        signal.removeEventListener('abort', onAbort);
        child?.kill('SIGKILL');
        log(e.message);
        reject(e);
      };
      const onAbort = () => fail(new Error(`connecting to ${options.target} over ssh timed out`));
      signal.addEventListener('abort', onAbort, { once: true });
      // Through a master that is up the first line comes at once; a stuck one never sends it.
      const firstLineTimer = masterUp ? setTimeout(() => fail(new StuckMaster()), SHARED_PATH_MS) : undefined;
      onCancel?.((prompt) => {
        const error = new SshConnectError('auth', `logging in to ${options.target} was cancelled (ssh asked "${prompt}")`);
        cancelled = { at: Date.now(), error };
        fail(error);
      });
      void start().then(
        (args) => {
          if (settled) return;
          child = spawn(sshPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
          via = { child };
          run(child);
        },
        (e: Error) => fail(e),
      );
      const run = (child: ChildProcess) => {
        let stderr = '';
        let probe: { platform: string; nodePath: string; nodeVersion: string } | undefined;
        let installed = false;
        let buf: Buffer = Buffer.alloc(0);
        child.stdin!.on('error', () => undefined);
        child.stderr!.setEncoding('utf8');
        child.stderr!.on('data', (d: string) => {
          stderr = (stderr + d).slice(-8192);
          for (const line of d.split('\n')) if (line.trim()) log(`[stderr] ${line.trim()}`);
        });
        child.once('error', (e: NodeJS.ErrnoException) =>
          fail(
            e.code === 'ENOENT'
              ? new SshConnectError(
                  'no-ssh',
                  `no ssh client found (${sshPath}): install OpenSSH (e.g. apt install openssh-client) or set its path`,
                )
              : e,
          ),
        );
        child.once('exit', (code) => {
          if (settled) return;
          if (probe === undefined || code === 255) return fail(describeSshFailure(options.target, stderr, code, ask, options.sshOptions));
          if (!/^(Linux|Darwin) /.test(probe.platform))
            return fail(
              new SshConnectError(
                'platform',
                `${options.target} runs ${probe.platform || 'an unknown system'}: SSH executors need Linux or macOS`,
              ),
            );
          if (!probe.nodePath)
            return fail(
              new SshConnectError(
                'no-node',
                `${options.target} has no Node.js on the PATH of a non-interactive login: install Node.js 20 or newer there`,
              ),
            );
          if (!/^v([2-9]\d|[1-9]\d\d)\./.test(probe.nodeVersion))
            return fail(
              new SshConnectError(
                'old-node',
                `${options.target} has Node.js ${probe.nodeVersion || '(unknown version)'} at ${probe.nodePath}: Exec Bridge needs 20 or newer`,
              ),
            );
          fail(describeSshFailure(options.target, stderr, code, ask, options.sshOptions));
        });
        const relayInstead = (why: string) => {
          log(`${why}: the relay of this same session instead`);
          child.stdin!.write('relay\n');
        };
        /** The fast path's answer: reach the daemon through a forward on the master, else go on as a relay. */
        const throughForward = async (text: string) => {
          const m = /^(\S+) (\{.*\})$/.exec(text);
          const token = DaemonToken.safeParse(m?.[1]);
          let state: ReturnType<typeof RemoteDaemonState.safeParse> | undefined;
          try {
            state = RemoteDaemonState.safeParse(JSON.parse(m?.[2] ?? ''));
          } catch {
            state = undefined;
          }
          if (!shared || !token.success || !state?.success || state.data.key !== bundle.version || !FORWARDABLE.test(state.data.socket))
            return relayInstead('the daemon it reported cannot be forwarded');
          const st = state.data;
          const fwd = forwardPath(shared, st.socket);
          if (inline !== st.socket) {
            await clearStaleForward(fwd);
            const r = await runSsh(
              sshPath,
              argsFor(sharing, undefined, true, ['-O', 'forward', '-L', `${fwd}:${st.socket}`]),
              env,
              SHARED_PATH_MS,
            );
            if (r.code !== 0) log(`ssh -O forward: ${r.stderr.trim() || `exit ${r.code ?? 'timed out'}`}`);
          }
          const conn = await connectThroughForward(fwd, token.data, signal);
          // The forward must live in a master that outlives this session (a session that is no mux client takes its forwards with it).
          const master = 'ok' in conn && (await socketAccepts(sharing.kind === 'none' ? '' : sharing.controlPath));
          if (settled) {
            if ('ok' in conn) conn.ok.close('the attempt ended');
            return;
          }
          if (!('ok' in conn)) return relayInstead(`the forward to the daemon did not connect (${conn.error.message})`);
          if (!master) {
            conn.ok.close('no master');
            return relayInstead('no master carries the forward');
          }
          settled = true;
          signal.removeEventListener('abort', onAbort);
          // End of input: the remote sh ends this session; the master stays for the next connection.
          child.stdin!.end();
          remote = infoOf(st, bundle.version);
          const carried = { masterPid: undefined as number | undefined };
          via = carried;
          const rec = { key: st.key, socket: st.socket, token: token.data, ...remoteFields(remote), pid: st.pid };
          const keep = () => {
            try {
              writeRecord(shared, { ...rec, ...(carried.masterPid ? { masterPid: carried.masterPid } : {}) });
            } catch (e) {
              log(`cannot record the daemon for the next connection: ${(e as Error).message}`);
            }
          };
          keep();
          // Which process the master is (sshPid), learned beside the connection's first calls rather than before them.
          void runSsh(sshPath, argsFor(sharing, undefined, true, ['-O', 'check']), env, SHARED_PATH_MS).then((check) => {
            carried.masterPid = masterPidOf(check);
            if (carried.masterPid) keep();
          });
          options.progress?.({ step: 'ready', info: remote });
          log(`reached the daemon (pid ${st.pid}) through a forward on the shared connection`);
          resolve(conn.ok);
        };
        const onLine = (line: string): boolean => {
          const [word, ...rest] = line.split(' ');
          const arg = rest.join(' ');
          if (word?.startsWith('EB-')) clearTimeout(firstLineTimer);
          switch (word) {
            case 'EB-DAEMON':
              options.progress?.({ step: 'starting' });
              void throughForward(arg).catch((e: Error) => relayInstead(`the forward failed (${e.message})`));
              return true;
            case 'EB-PROBE': {
              const [platform = '', nodePath = '', nodeVersion = ''] = arg.split('|');
              probe = { platform, nodePath, nodeVersion };
              log(`${platform}, node ${nodeVersion || 'none'} ${nodePath}`);
              if (remote === undefined && platform !== localUname()) bundle = bundleFor(options.cliPath, options.nodePtyDir, platform);
              return true;
            }
            case 'EB-HAVE':
              options.progress?.({ step: 'starting' });
              log(`exec-server ${bundle.version} is installed; starting`);
              return true;
            case 'EB-SEND': {
              const payload = bundle.payload();
              options.progress?.({ step: 'installing', version: bundle.version, bytes: payload.length });
              log(`installing exec-server ${bundle.version} (${payload.length} bytes, ${bundle.files.length} files)`);
              log(
                bundle.ptyFrom
                  ? `node-pty for ${probe?.platform ?? '?'} from ${bundle.ptyFrom}`
                  : `no node-pty build for ${probe?.platform ?? '?'} here: commands run, terminals (PTYs) will not`,
              );
              child.stdin!.write(payload);
              installed = true;
              return true;
            }
            case 'EB-INSTALLED':
              options.progress?.({ step: 'starting' });
              log(`installed ${arg}; starting`);
              return true;
            case 'EB-ERROR': {
              const [what = '', code = '', ...msg] = rest;
              const text = msg.join(' ');
              const fix =
                code === 'ENOSPC'
                  ? ': the remote disk is full; free some space in your home directory'
                  : code === 'EACCES' || code === 'EPERM'
                    ? ': permission denied in ~/.exec-bridge on the remote; check that your home directory is writable'
                    : '';
              fail(new SshConnectError('install', `${what} on ${options.target} failed: ${text}${fix}`));
              return false;
            }
            case 'EB-READY': {
              remote = {
                platform: probe?.platform ?? '',
                nodePath: probe?.nodePath ?? '',
                nodeVersion: probe?.nodeVersion ?? '',
                version: bundle.version,
                installed,
                daemonPid: Number(arg),
              };
              options.progress?.({ step: 'ready', info: remote });
              log(`relay ready (daemon pid ${arg})`);
              return false;
            }
            default:
              log(`[remote] ${line}`);
              return true;
          }
        };
        const onData = (d: Buffer) => {
          buf = buf.length ? Buffer.concat([buf, d]) : d;
          for (;;) {
            const i = buf.indexOf(10);
            if (i < 0) return;
            const line = buf.subarray(0, i).toString('utf8');
            buf = buf.subarray(i + 1);
            if (!onLine(line)) {
              child.stdout!.off('data', onData);
              if (settled) return;
              if (!line.startsWith('EB-READY')) return;
              settled = true;
              signal.removeEventListener('abort', onAbort);
              child.stdout!.pause();
              if (buf.length) child.stdout!.unshift(buf);
              const transport = new RelayConnection(child.stdout!, child.stdin!, MAX_ANSWER_BYTES);
              transport.onClose(() => {
                if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
              });
              child.once('exit', (code, sig) => transport.close(`ssh to ${options.target} exited (${sig ?? code})`));
              child.stdout!.resume();
              resolve(transport);
              return;
            }
          }
        };
        child.stdout!.on('data', onData);
      };
    });

  return Object.defineProperties(connector, {
    remote: { get: () => remote },
    sshPid: {
      get: () => {
        if (via && 'masterPid' in via) return via.masterPid;
        const c = via?.child;
        return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
      },
    },
  }) as SshConnector;
}

/** No connection sharing (the `ssh -G` that decides it runs without ours). */
const NO_SHARING: Sharing = { kind: 'none', why: '', options: [] };

const CONTROL_OPTION = /^\s*control(path|master|persist)\s*[=\s]/i;

/** A path ssh's `-L local:remote` can take (it splits at ':'). */
const FORWARDABLE = /^\/[^:\s%]*$/;

/** The attempt through a shared master got no first line within SHARED_PATH_MS. */
class StuckMaster extends Error {
  constructor() {
    super(`the shared ssh connection did not answer within ${SHARED_PATH_MS} ms`);
  }
}

function remoteFields(r: RemoteInfo): { platform: string; node: string; nodeVersion: string } {
  return { platform: r.platform, node: r.nodePath, nodeVersion: r.nodeVersion };
}

/**
 * A stdio connection to our relay (`exec-bridge connect`): JSON lines, plus the relay's own
 * keepalive (`{"ebRelayPing":N}` → `{"ebRelayPong":N}`, answered by the relay, never forwarded),
 * so the client notices a dead path (and the relay knows its client is alive).
 */
export class RelayConnection extends StdioTransport implements Connection {
  private pongs = new Set<() => void>();
  private n = 0;

  ping(): void {
    this.send(`{"ebRelayPing":${++this.n}}`);
  }

  onPong(listener: () => void): Disposable {
    this.pongs.add(listener);
    return { dispose: () => void this.pongs.delete(listener) };
  }

  protected override emitMessage(text: string): void {
    if (text.length < 64 && text.startsWith('{"ebRelayPong":')) {
      for (const l of [...this.pongs]) l();
      return;
    }
    super.emitMessage(text);
  }
}
