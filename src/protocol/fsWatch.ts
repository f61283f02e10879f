import { z } from 'zod';
import { PathUri, U64 } from './common';

/*
 * Ours: change events for files (docs/protocol-extensions.md "File watches"). Neither codex nor the
 * reference has `fs/watch`, so the names are ours and the extension is negotiated: a client asks
 * with `initialize {execBridgeFsWatch: true}`, our server answers with its bounds in the result's
 * `execBridgeFsWatch`; a server that does not answer so (codex) has no watches, and a client polls.
 * Watches belong to the connection that made them: they end with it (a resumed session's new
 * connection watches again).
 */

/** `initialize`'s field (params: `true` asks; result: the bounds below). */
export const FS_WATCH_FIELD = 'execBridgeFsWatch';
export const FS_WATCH = 'execBridge/fsWatch';
export const FS_UNWATCH = 'execBridge/fsUnwatch';
export const FS_CHANGED = 'execBridge/fsChanged';

/** The server's bounds for one connection, in `initialize`'s result. */
export const FsWatchLimits = z.object({
  /** Watches a connection may hold at once; one more is refused with -32600. */
  maxWatches: U64,
  /** Directories the watches of a connection may watch together; a recursive watch stops there (`truncated`). */
  maxDirectories: U64,
  /** Events of one watch are gathered this long (ms, from the first) and sent as one notification. */
  coalesceMs: U64,
  /** Changes in one notification at most; a burst beyond is sent as `overflow`. */
  maxChanges: U64,
});
export type FsWatchLimits = z.infer<typeof FsWatchLimits>;

export const FsWatchParams = z.object({
  /** Client-chosen, 1–64 characters; must not be in use on this connection. */
  watchId: z.string().min(1).max(64),
  /** A directory (its entries; with `recursive`, everything below) or a file (that file). */
  path: PathUri,
  recursive: z.boolean(),
  /**
   * Directories not to descend into: a plain name (`node_modules`) matches a directory of that name
   * anywhere below, a relative path (`.git/objects`, `*` for one segment) the directories it ends with.
   */
  excludes: z.array(z.string().min(1).max(256)).max(64).optional(),
  /** The fs sandbox context, as for every `fs/*` call: the watch sees what a sandboxed read could. */
  sandbox: z.unknown().optional(),
});
export type FsWatchParams = z.infer<typeof FsWatchParams>;

export const FsWatchResult = z.object({
  watchId: z.string(),
  /** Directories the watch put a watch on (0 for a file: its directory, counted once). */
  directories: U64,
  /** A bound (the connection's directories, depth 64) cut a recursive watch short: parts of the tree are not watched. */
  truncated: z.boolean(),
});
export type FsWatchResult = z.infer<typeof FsWatchResult>;

/** Idempotent: an unknown (or already ended) id answers `{}` too. */
export const FsUnwatchParams = z.object({ watchId: z.string() });

export const FsChangeType = z.enum(['created', 'changed', 'deleted']);
export type FsChangeType = z.infer<typeof FsChangeType>;
export const FsChange = z.object({ type: FsChangeType, path: PathUri });
export type FsChange = z.infer<typeof FsChange>;

/**
 * Server → client. Paths are below the watch's `path` as the client gave it (not its real path).
 * `created` is also sent for an entry that was replaced (a rename over it). `overflow`: more
 * changed than `maxChanges` (or the OS dropped events); `changes` is then empty and the client
 * should look at the whole watched path again.
 */
export const FsChangedNotification = z.object({
  watchId: z.string(),
  changes: z.array(FsChange),
  overflow: z.boolean().optional(),
});
export type FsChangedNotification = z.infer<typeof FsChangedNotification>;
