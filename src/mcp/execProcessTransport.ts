import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ProcessHandle, ProcessEvent, StartProcessOptions } from '../client';
import { systemClock, Deferred, describeExitCode, LineSplitter, shellLine, type Clock } from '../util';
import { parseExitMarker, wrapWithReaper } from './orphanReaper';
import type { ServerLog } from './serverLog';

/** What the transport needs from the exec client: starting a process (narrow, so tests and callers can pass the real client). */
export interface ProcessStarter {
  startProcess(options: StartProcessOptions): Promise<ProcessHandle>;
}

/** How the server process ended, as far as the transport knows. */
export interface TransportExit {
  /** From `process/exited`; undefined when the process was never confirmed to end (connection lost). */
  exitCode: number | undefined;
  /** `close()` was called (a stop), as opposed to the process ending by itself. */
  requested: boolean;
  /** Set when the handle failed (client failed, output lost) or the process could not be started. */
  error?: Error;
}

export interface ExecProcessTransportOptions {
  client: ProcessStarter;
  /** argv, cwd, env/envPolicy, processId; `pipeStdin`/`tty` are forced to true/false. */
  launch: Omit<StartProcessOptions, 'pipeStdin' | 'tty' | 'signal'>;
  /** stderr lines and lifecycle notes go here. */
  log?: ServerLog;
  /** Every JSON-RPC message, both ways (for the optional trace). */
  trace?: (direction: 'send' | 'receive', message: JSONRPCMessage) => void;
  /** After `process/signal interrupt`, how long to wait for the process to exit before `process/terminate`. Default 1000 ms. */
  graceMs?: number;
  /** After `process/terminate`, how long to wait for `process/closed` before giving up on the confirmation. Default 5000 ms. */
  closeConfirmMs?: number;
  /**
   * Run the server under the POSIX reaper wrapper (orphanReaper.ts), so helpers it leaves behind
   * when it exits on its own are killed. Default false; the manager turns it on for POSIX executors.
   */
  reapOrphans?: boolean;
  /** A sandboxed server's managed network refused a destination while it runs (asked for with `launch.reportBlocked`). */
  onBlocked?: (b: { target: string; reason: string }) => void;
  /** One incoming line longer than this is dropped with an error (the framing then resyncs at the next newline). Default 10 MiB. */
  maxLineBytes?: number;
  clock?: Clock;
}

/**
 * An MCP SDK `Transport` over an exec-server process (docs/mcp.md "How it works"):
 * newline-delimited JSON-RPC written with `process/write` and read from the process's stdout
 * events; stderr goes to the server log, never to the parser.
 *
 * The process lives in the exec-server session, so a connection drop that the client recovers from
 * is invisible here: writes wait, events resume in seq order. `onclose` fires exactly once: when the
 * process closed (all output delivered), when its handle failed, or when `close()` finished.
 *
 * Stopping (`close()`): the protocol has no "close stdin", so the graceful phase is an interrupt
 * (SIGINT, which Node and Python servers exit on), a short grace, then `process/terminate`
 * (SIGKILL of the whole process group on the executor, grandchildren included).
 */
export class ExecProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private handle: ProcessHandle | undefined;
  private starting: Promise<ProcessHandle | undefined> | undefined;
  private exitCode: number | undefined;
  /** The server's own exit code, reported by the reaper wrapper. */
  private markerExitCode: number | undefined;
  private readonly interceptStderr = (line: string): boolean => {
    if (!this.options.reapOrphans) return false;
    const code = parseExitMarker(line);
    if (code === undefined) return false;
    this.markerExitCode = code;
    return true;
  };
  private closeRequested = false;
  private closingPromise: Promise<void> | undefined;
  private readonly closedDeferred = new Deferred<void>();
  private finished = false;
  private exitInfo: TransportExit | undefined;
  private readonly clock: Clock;
  private readonly graceMs: number;
  private readonly closeConfirmMs: number;
  /** Stdout as JSON-RPC lines; an oversized one is dropped and reported, the next ones still count. */
  private readonly stdout: LineSplitter;

  constructor(private readonly options: ExecProcessTransportOptions) {
    this.clock = options.clock ?? systemClock;
    this.graceMs = options.graceMs ?? 1000;
    this.closeConfirmMs = options.closeConfirmMs ?? 5000;
    const maxLineBytes = options.maxLineBytes ?? 10 * 1024 * 1024;
    this.stdout = new LineSplitter({
      maxLineBytes,
      overflow: 'discard',
      onLine: (line) => this.dispatchLine(line),
      onOverflow: () => this.onerror?.(new Error(`a message from the MCP server exceeded ${maxLineBytes} bytes and was dropped`)),
    });
  }

  private received = 0;

  /** JSON-RPC messages the server has sent so far. */
  get messagesReceived(): number {
    return this.received;
  }

  /** Negotiated MCP protocol version (the SDK tells us after initialize). */
  protocolVersion: string | undefined;

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
  }

  /**
   * `pid` and `stderr` mark this as a stdio channel for the SDK's version negotiation (it looks
   * for the two, as on its own stdio transport): a server that never answers `server/discover`
   * is then a 2025 server and gets `initialize`, rather than failing the start. The probe runs
   * on this very process. stderr goes to the server log, not to a stream; the OS pid is the
   * executor's to know.
   */
  readonly pid = null;
  readonly stderr = null;

  /** The executor process, once started. */
  get process(): ProcessHandle | undefined {
    return this.handle;
  }

  /** Set once `onclose` fired. */
  get exit(): TransportExit | undefined {
    return this.exitInfo;
  }

  /** Resolves when the transport finished (after `onclose`). */
  get closed(): Promise<void> {
    return this.closedDeferred.promise;
  }

  async start(): Promise<void> {
    if (this.starting) throw new Error('ExecProcessTransport already started');
    const { launch, client } = this.options;
    this.options.log?.lifecycle(`starting: ${shellLine(launch.argv)}${launch.cwd ? ` (cwd ${launch.cwd})` : ''}`);
    const argv = this.options.reapOrphans ? wrapWithReaper(launch.argv) : launch.argv;
    const started = client.startProcess({ ...launch, argv, pipeStdin: true, tty: false });
    this.starting = started.then(
      (h) => h,
      () => undefined,
    );
    let handle: ProcessHandle;
    try {
      handle = await started;
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      this.options.log?.lifecycle(`could not start: ${error.message}`);
      this.finish({ exitCode: undefined, requested: this.closeRequested, error });
      throw error;
    }
    this.handle = handle;
    this.options.log?.lifecycle(`started as process ${handle.processId}`);
    if (this.closeRequested) {
      // close() arrived while the start was in flight; it is waiting for us to kill the process.
      return;
    }
    this.subscribe(handle);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const handle = this.handle;
    if (!handle || this.finished || this.closeRequested) throw new Error('the MCP server process is not running');
    this.options.trace?.('send', message);
    await handle.write(serializeMessage(message));
  }

  /** Stops the process (interrupt, grace, terminate) and resolves after `onclose`. Idempotent. */
  close(): Promise<void> {
    this.closingPromise ??= this.stop();
    return this.closingPromise;
  }

  private async stop(): Promise<void> {
    if (this.finished) return;
    this.closeRequested = true;
    const handle = this.handle ?? (await this.starting);
    if (!handle) {
      // Never started (or the start failed, which already finished us).
      this.finish({ exitCode: undefined, requested: true });
      return;
    }
    if (!this.handle) {
      // The start answer came after close(): subscribe now so we see the process end.
      this.handle = handle;
    }
    this.subscribe(handle);
    const t0 = this.clock.now();
    if (handle.status === 'running') {
      try {
        await handle.interrupt();
      } catch {
        // Best effort: terminate below is what guarantees the end.
      }
      if (await this.waitClosed(this.graceMs)) {
        this.options.log?.lifecycle(`stopped after interrupt in ${this.clock.now() - t0} ms`);
        return;
      }
    }
    if (!this.finished) {
      let terminateError: unknown;
      try {
        await handle.terminate();
      } catch (e) {
        terminateError = e;
      }
      if (await this.waitClosed(this.closeConfirmMs)) {
        this.options.log?.lifecycle(`terminated (process group killed) in ${this.clock.now() - t0} ms`);
        return;
      }
      const why = terminateError instanceof Error ? terminateError.message : 'no confirmation from the executor';
      this.options.log?.lifecycle(`could not confirm the process ended: ${why}`);
      this.finish({ exitCode: this.exitCode, requested: true, error: terminateError instanceof Error ? terminateError : new Error(why) });
    }
  }

  private subscribed = false;

  private subscribe(handle: ProcessHandle): void {
    if (this.subscribed) return;
    this.subscribed = true;
    // Subscribing replays (synchronously) whatever arrived before the start answer.
    handle.onEvent((e) => this.onProcessEvent(e));
    const onBlocked = this.options.onBlocked;
    if (onBlocked) handle.onSandboxBlocked((b) => onBlocked(b));
  }

  private onProcessEvent(e: ProcessEvent): void {
    if (this.finished) return;
    switch (e.type) {
      case 'output':
        if (e.stream === 'stderr') this.options.log?.stderr(e.data, this.interceptStderr);
        else this.stdout.push(e.data);
        break;
      case 'exited':
        this.exitCode = e.exitCode;
        if (!this.closeRequested) void this.reapAfterExit();
        break;
      case 'closed':
        // `closed` (not `exited`) ends the stream: output still draining after the exit is not lost.
        this.flushStdout();
        this.options.log?.flushStderr(this.interceptStderr);
        if (this.markerExitCode !== undefined) this.exitCode = this.markerExitCode;
        this.options.log?.lifecycle(`exited: ${describeExitCode(this.exitCode)}`);
        this.finish({ exitCode: this.exitCode, requested: this.closeRequested });
        break;
      case 'failed':
        this.options.log?.lifecycle(`lost the process: ${e.error.message}`);
        this.onerror?.(e.error);
        this.finish({ exitCode: this.exitCode, requested: this.closeRequested, error: e.error });
        // If only the output was lost, the process may still run: do not leave it behind.
        if (e.error.kind === 'outputLost' && this.handle) void this.handle.terminate().catch(() => undefined);
        break;
    }
  }

  /**
   * The process exited by itself: also kill its process group on the executor (our exec-server
   * kills the group even after the leader exited; others answer "not running" and do nothing,
   * which is what the reaper wrapper is for).
   */
  private async reapAfterExit(): Promise<void> {
    if (this.closeRequested) return;
    try {
      await this.handle?.terminate();
    } catch {
      // The process is already gone from the executor's table, or the connection is: nothing to do.
    }
  }

  private flushStdout(): void {
    const rest = this.stdout.takeRest();
    if (rest) this.dispatchLine(rest);
  }

  private dispatchLine(bytes: Buffer): void {
    const line = bytes.toString('utf8').replace(/\r$/, '');
    if (line.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line);
    } catch {
      // Servers sometimes print banners on stdout: keep them visible, do not kill the session.
      this.options.log?.lifecycle(`stdout line that is not JSON-RPC (ignored): ${line.length > 500 ? line.slice(0, 500) + '…' : line}`);
      this.onerror?.(new Error(`the MCP server wrote a line that is not JSON-RPC: ${line.slice(0, 200)}`));
      return;
    }
    this.options.trace?.('receive', message);
    this.received++;
    this.deliver(message);
  }

  /** Messages held back for a microtask (see `deliver`), in order; undefined when none are. */
  private held: JSONRPCMessage[] | undefined;
  /** A notification was delivered in this turn of the event loop. */
  private notifiedThisTurn = false;
  /** `finish` waits for the held messages. */
  private afterHeld: (() => void) | undefined;

  /**
   * Hands a message to the SDK in order. The SDK runs a notification's handler a microtask later
   * but takes an answer at once, so a progress notification and the answer that follows it in one
   * output chunk would arrive the other way round — the progress for a request already answered,
   * dropped as "unknown token". An answer after a notification of the same turn (and whatever
   * follows it) therefore waits one microtask.
   */
  private deliver(message: JSONRPCMessage): void {
    if (this.held) {
      this.held.push(message);
      return;
    }
    const isAnswer = 'id' in message && !('method' in message);
    if (isAnswer && this.notifiedThisTurn) {
      this.held = [message];
      queueMicrotask(() => {
        const batch = this.held ?? [];
        this.held = undefined;
        this.notifiedThisTurn = false;
        for (const m of batch) this.deliver(m);
        if (!this.held && this.afterHeld) {
          const done = this.afterHeld;
          this.afterHeld = undefined;
          done();
        }
      });
      return;
    }
    if (!('id' in message)) {
      if (!this.notifiedThisTurn) queueMicrotask(() => (this.notifiedThisTurn = false));
      this.notifiedThisTurn = true;
    }
    this.onmessage?.(message);
  }

  private waitClosed(ms: number): Promise<boolean> {
    if (this.finished) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(false), ms);
      void this.closedDeferred.promise.then(() => {
        this.clock.clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private finish(exit: TransportExit): void {
    if (this.finished) return;
    this.finished = true;
    this.exitInfo = exit;
    this.options.log?.flushStderr(this.interceptStderr);
    const close = () => {
      this.closedDeferred.resolve();
      this.onclose?.();
    };
    // The last answers first (a held one would otherwise meet a closed client).
    if (this.held) this.afterHeld = close;
    else close();
  }
}
