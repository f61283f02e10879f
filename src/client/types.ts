import type { OutputStream, EnvPolicy, ProcessStartParams, PtySize } from '../protocol';
import type { Transport } from '../rpc';
import type { Clock, Disposable } from '../util';
import type { DisconnectedError, ExecClientError } from './errors';

/**
 * The client's connection, observable so a UI can show it (docs/style.md §3).
 * `connected → recovering → connected | failed`; `failed` is final.
 */
export type ConnectionState =
  | { kind: 'connected'; sessionId: string }
  | {
      kind: 'recovering';
      /** `clock.now()` when the current connection was lost. */
      since: number;
      /** Reconnect attempts so far in this outage (0 before the first). */
      attempt: number;
      /** Why the connection was lost (transport close reason). */
      cause: string;
      /**
       * `clock.now()` when recovery gives up (the session's TTL on the executor, or the client's
       * `deadlineMs`); undefined: it never gives up while the executor may still have the session.
       */
      until?: number;
    }
  | { kind: 'failed'; error: DisconnectedError };

/** Where the client connects. */
export type Endpoint =
  | {
      kind: 'websocket';
      /** `ws://` or `wss://`. */
      url: string;
      /** Sent as `Authorization: Bearer <token>` on the upgrade; never logged. */
      token?: string;
    }
  | {
      /** A command that speaks the protocol on its stdio, e.g. `ssh devbox exec-bridge serve --listen stdio`. */
      kind: 'stdio';
      command: string;
      args?: string[];
      cwd?: string;
      env?: NodeJS.ProcessEnv;
    };

/**
 * One live connection: a transport, optionally with keepalive probes. WebSocket connections
 * implement `ping`/`onPong` (ws pings); a connection without them gets no keepalive.
 */
export interface Connection extends Transport {
  ping?(): void;
  onPong?(listener: () => void): Disposable;
  /** Stop / restart reading from the peer (TCP backpressure). */
  pause?(): void;
  resume?(): void;
}

/**
 * Seam (docs/style.md §9): opens one connection. The client calls it for the first connection and for
 * each reconnect attempt; `signal` aborts an attempt that took too long.
 */
export type Connector = (signal: AbortSignal) => Promise<Connection>;

export interface ClientOptions {
  /** Where to connect; ignored when `connector` is given. */
  endpoint?: Endpoint;
  /** Opens connections; default built from `endpoint`. */
  connector?: Connector;
  /** Sent in `initialize`. Default `exec-bridge`. */
  clientName?: string;
  /**
   * How long recovery may take before the client goes `failed`. Default: as long as the executor
   * keeps the session (the TTL its `initialize` answered, plus a minute; a server that tells none,
   * such as codex: 25 000 ms). `0`: never give up (recovery ends only when the executor says it no
   * longer knows the session).
   */
  deadlineMs?: number;
  /**
   * How long the executor should keep this session once the connection drops (asked in
   * `initialize`, capped by the server; codex ignores it). Default 10 h (DEFAULT_SESSION_TTL_MS);
   * `null`: ask for nothing (the server's default applies).
   */
  sessionTtlMs?: number | null;
  /** One connect + `initialize` attempt is abandoned after this. Default 5 000 ms. */
  attemptTimeoutMs?: number;
  /**
   * Reconnect back-off: `stepMs`, doubling per attempt, capped at `maxMs` for the first 30 s of an
   * outage and at `longMaxMs` after, plus per-client jitter. Default 100 / 2 000 / 30 000 ms.
   */
  backoff?: { stepMs: number; maxMs: number; longMaxMs?: number };
  /**
   * Client-side keepalive: ping every `intervalMs`; no pong within `timeoutMs` ⇒ the connection is
   * treated as dead (a half-open socket must not stall recovery). Default 5 000 / 5 000 ms; `false` disables.
   */
  keepalive?: { intervalMs: number; timeoutMs: number } | false;
  /**
   * The largest message accepted from the server (default 384 MiB, `MAX_ANSWER_BYTES`); an answer
   * over it resets the connection and fails its call with `AnswerTooLargeError`. Used for the
   * connector built from `endpoint` and in that error's words.
   */
  maxAnswerBytes?: number;
  /** Regular calls in flight at once (one more permit is reserved for cleanup calls). Default 64. */
  maxInFlight?: number;
  /**
   * Ask the server for binary output frames (no base64; docs/protocol-extensions.md). A server
   * that does not offer them (codex) ignores the request. Default true.
   */
  binaryOutput?: boolean;
  /**
   * Ask the executor to serve spooled output (`execBridgeOutputSpool`): an attached process then
   * replays everything still spooled, not only the newest 1 MiB. Default false: the executor then
   * writes every process's output beyond its 1 MiB window to disk, which costs a fast stream about
   * half its throughput (bench/RESULTS.md), worth it only to a client that reattaches later (the
   * extension's terminals ask; `exec-bridge run` does not). `{ processBytes }` asks for at most that
   * much per process (memory window included; the server's own cap still applies). Other servers
   * ignore it.
   */
  outputSpool?: boolean | { processBytes: number };
  /**
   * Ask for file watches (`execBridgeFsWatch`, docs/protocol-extensions.md "File watches"): on a
   * server that offers them `FsWatchClient` (./fsWatch.ts) watches there, else callers poll. Asking
   * costs nothing until something is watched; other servers ignore the field. Default true.
   */
  fsWatch?: boolean;
  /**
   * If a cleanup call (`process/terminate`, `fs/close`) cannot get even the reserved permit within
   * this long, the connection is judged wedged and closed so teardown can proceed. Default 10 000 ms.
   */
  cleanupStallMs?: number;
  /**
   * Resume this session on the first connection instead of creating one (docs/protocol.md §10), e.g.
   * after a window reload; if the executor no longer has it, `connect` rejects with `SessionExpiredError`.
   */
  resumeSessionId?: string;
  /**
   * With `resumeSessionId`: if another connection still holds the session (the extension host of a
   * window that reloaded but lingers), take it over instead of waiting for it to let go
   * (capability `execBridgeSessionTakeover`; the other client fails with reason `takenOver`). Only
   * the first connection asks; a server without it answers -32010 as before.
   */
  takeOverSession?: boolean;
  /** A process id is tracked (its start is sent, or it is attached) or is over for good (closed, or lost); not told when the client fails. */
  onProcessTracking?(event: { processId: string; tracked: boolean; tty: boolean; stdinWritable: boolean }): void;
  clock?: Clock;
  /** Source of randomness for jitter and generated ids; default `Math.random`. */
  random?: () => number;
  /** Diagnostic lines (state changes, retries). Never receives tokens. */
  log?: (line: string) => void;
}

export interface CallOptions {
  /** Cancels the wait for this call (also while it waits for a permit or for recovery). */
  signal?: AbortSignal;
}

export interface StartProcessOptions extends CallOptions {
  /** Non-empty; argv[0] is resolved through PATH on the executor. */
  argv: string[];
  /** Absolute path on the executor (plain path; the client converts it to a `file://` URI). */
  cwd: string;
  /**
   * Without `envPolicy`: the COMPLETE child environment (protocol semantics). When both `env` and
   * `envPolicy` are omitted the child inherits the executor's environment (`envPolicy.inherit: 'all'`).
   */
  env?: Record<string, string>;
  /** Build the child env from the executor's own, then overlay `env`. */
  envPolicy?: EnvPolicy | null;
  /** Run in a PTY (stream `pty`, stderr merged, `\n` → `\r\n`). Default false. */
  tty?: boolean;
  /** Non-tty only: keep stdin writable. Default false (stdin is /dev/null). */
  pipeStdin?: boolean;
  /** Initial PTY size (our server only; the real one uses 80×24). */
  ptySize?: PtySize;
  /** Executor-side sandbox intent (codex's FileSystemSandboxContext, src/protocol/sandbox.ts), passed through. */
  sandbox?: ProcessStartParams['sandbox'];
  /** Ours: only these destinations, through the executor's proxy (sent with `enforceManagedNetwork`; needs a network-off sandbox). */
  managedNetwork?: { allow: string[]; deny?: string[] };
  /** With `managedNetwork`: ask to hear each refusal while the process runs (`ProcessHandle.onSandboxBlocked`). */
  reportBlocked?: boolean;
  /** Overrides argv[0] as the child sees it. */
  arg0?: string | null;
  /** Session-unique id; generated when omitted. */
  processId?: string;
  /**
   * Ours (capability `execBridgeProcessCredit`): the server reads the process only while fewer than
   * this many of its output bytes were not reported to `ProcessHandle.outputConsumed`. Ignored
   * (nothing sent) on a server without it; see `ProcessHandle.creditWindow`.
   */
  creditWindow?: number;
}

/** Ordered per-process events (by the server's per-process `seq`); `closed` or `failed` is last. */
export type ProcessEvent =
  | { type: 'output'; seq: number; stream: OutputStream; data: Buffer }
  | { type: 'exited'; seq: number; exitCode: number; sandboxDenied: boolean; sandboxDeniedTarget?: string }
  | { type: 'closed'; seq: number }
  /** Terminal: the handle will deliver nothing more (client failed, or output lost). */
  | { type: 'failed'; error: ExecClientError };

export interface ProcessCompletion {
  /** Normal exit: the code; killed by signal N: 128+N; -1 if unknown. */
  exitCode: number;
  /** The executor judged the failure to be a sandbox denial. */
  sandboxDenied: boolean;
  /** Ours: the managed network refused this destination (`host:port`). */
  sandboxDeniedTarget?: string;
}

export type ProcessStatus = 'running' | 'exited' | 'closed' | 'failed';
