import { ErrorCode, FsChangedNotification, type FsChangeType, type FsWatchResult } from '../protocol';
import { Emitter, errorMessage, type Disposable, type Event } from '../util';
import { fromUri, toUri } from './callHelpers';
import { RemoteError } from './errors';
import type { ExecServerClient } from './execServerClient';

/** What a watch asks for (plain absolute paths on the executor). */
export interface WatchRequest {
  path: string;
  recursive: boolean;
  /** Directory names or relative tails not to descend into (`node_modules`, `.git/objects`). */
  excludes?: string[];
  /** The fs sandbox context, as for `fs/*`. */
  sandbox?: unknown;
}

export interface WatchChange {
  type: FsChangeType;
  /** A plain absolute path on the executor. */
  path: string;
}

/**
 * One watch as its owner sees it. `covered` is true while the server watches all of it (answered,
 * not truncated, on the current connection): only then may the owner stop polling what it covers.
 */
export interface ClientWatch extends Disposable {
  readonly request: WatchRequest;
  readonly covered: boolean;
  /** The server's answer on the current connection; undefined before it (or when it refused). */
  readonly result: FsWatchResult | undefined;
  /** Why the server refused it (too many watches, a missing path, …); cleared by the next attempt. */
  readonly error: string | undefined;
  /** Settles once the current attempt was answered (resolves either way). */
  readonly ready: Promise<void>;
}

export interface FsWatchEvent {
  watch: ClientWatch;
  changes: WatchChange[];
  /** The server could not say what changed (too much at once): look at the whole watched path again. */
  overflow: boolean;
}

type WatchClientHost = Pick<ExecServerClient, 'call' | 'onFsChanged' | 'fsWatchLimits' | 'onDidChangeState' | 'state'>;

class Watch implements ClientWatch {
  result: FsWatchResult | undefined;
  error: string | undefined;
  /** The id of the current attempt (one per connection). */
  serverId: string | undefined;
  ready: Promise<void> = Promise.resolve();
  disposed = false;
  constructor(
    readonly request: WatchRequest,
    private readonly end: (w: Watch) => void,
  ) {}
  get covered(): boolean {
    return !this.disposed && this.result !== undefined && !this.result.truncated;
  }
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.end(this);
  }
}

/**
 * File watches on a server that offers them (`execBridgeFsWatch`, docs/protocol-extensions.md):
 * the client wrapper of `execBridge/fsWatch` / `fsUnwatch` / `fsChanged`. Watches belong to a
 * connection on the server, so after a resume every watch is made again (a new id; the old
 * connection's are gone with it) and `onDidReconnect` fires: what changed while disconnected was
 * not reported, and the owner should look again. On a server without watches nothing is sent and
 * no watch is ever `covered`.
 */
export class FsWatchClient implements Disposable {
  private readonly watches = new Set<Watch>();
  private readonly byServerId = new Map<string, Watch>();
  private counter = 0;
  private readonly changes = new Emitter<FsWatchEvent>();
  readonly onDidChange: Event<FsWatchEvent> = this.changes.event;
  private readonly reconnected = new Emitter<void>();
  /** A new connection (a resume): every watch was asked again; events in between are lost. */
  readonly onDidReconnect: Event<void> = this.reconnected.event;
  private readonly subscriptions: Disposable[];
  private disposed = false;

  constructor(
    private readonly client: WatchClientHost,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    let wasConnected = client.state.kind === 'connected';
    this.subscriptions = [
      client.onFsChanged((params) => this.onChanged(params)),
      client.onDidChangeState((s) => {
        if (s.kind === 'connected' && !wasConnected) this.reestablish();
        wasConnected = s.kind === 'connected';
      }),
    ];
  }

  /** Whether the current connection may watch (our server; not codex). */
  get supported(): boolean {
    return this.client.fsWatchLimits !== undefined;
  }

  get size(): number {
    return this.watches.size;
  }

  /** Starts watching (asked at once when supported); `dispose` ends it. */
  watch(request: WatchRequest): ClientWatch {
    const w = new Watch(request, (x) => this.end(x));
    if (this.disposed) {
      w.disposed = true;
      return w;
    }
    this.watches.add(w);
    this.establish(w);
    return w;
  }

  private establish(w: Watch): void {
    if (w.serverId) this.byServerId.delete(w.serverId);
    w.serverId = undefined;
    w.result = undefined;
    w.error = undefined;
    if (!this.supported || w.disposed) {
      w.ready = Promise.resolve();
      return;
    }
    const id = `w${++this.counter}`;
    w.serverId = id;
    // Registered before the call: events may come before the answer.
    this.byServerId.set(id, w);
    const { path, recursive, excludes, sandbox } = w.request;
    w.ready = this.client
      .call('execBridge/fsWatch', {
        watchId: id,
        path: toUri(path),
        recursive,
        ...(excludes && excludes.length > 0 ? { excludes: excludes.slice(0, 64) } : {}),
        ...(sandbox !== undefined ? { sandbox } : {}),
      })
      .then(
        (result) => {
          if (w.serverId !== id || w.disposed) {
            // Replaced by a newer attempt (a resume) or ended meanwhile: this one is not needed.
            this.unwatch(id);
            return;
          }
          w.result = result;
          if (result.truncated)
            this.log(`watch ${path}: the executor watches ${result.directories} directories of it (its bound); the rest is polled`);
        },
        (e: unknown) => {
          if (w.serverId !== id) return;
          this.byServerId.delete(id);
          w.serverId = undefined;
          w.error = errorMessage(e);
          // VS Code watches many paths that do not exist (yet): polling finds them when they do.
          if (!(e instanceof RemoteError && e.code === ErrorCode.NotFound)) this.log(`watch ${path}: ${w.error}; polled instead`);
        },
      );
  }

  private unwatch(id: string): void {
    this.byServerId.delete(id);
    if (this.client.state.kind !== 'connected' || !this.supported) return;
    this.client.call('execBridge/fsUnwatch', { watchId: id }).catch(() => undefined);
  }

  private end(w: Watch): void {
    this.watches.delete(w);
    if (w.serverId) this.unwatch(w.serverId);
    w.serverId = undefined;
    w.result = undefined;
  }

  private reestablish(): void {
    if (this.disposed) return;
    for (const w of this.watches) this.establish(w);
    this.reconnected.fire();
  }

  private onChanged(params: unknown): void {
    const n = FsChangedNotification.safeParse(params);
    if (!n.success) return;
    const w = this.byServerId.get(n.data.watchId);
    if (!w || w.disposed) return;
    this.changes.fire({
      watch: w,
      changes: n.data.changes.map((c) => ({ type: c.type, path: fromUri(c.path) })),
      overflow: n.data.overflow === true,
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const s of this.subscriptions) s.dispose();
    for (const w of [...this.watches]) w.dispose();
    this.changes.dispose();
    this.reconnected.dispose();
  }
}
