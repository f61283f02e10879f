import { z } from 'zod';
import { Base64, PathUri, U64 } from './common';

// Every fs request also accepts an optional `sandbox` context (enforced: server/fsSandbox.ts) and results
// are `{}` unless stated. Errors: missing path → -32004, other OS errors → -32603.
const sandbox = { sandbox: z.unknown().optional() };

export const FsReadFileParams = z.object({ path: PathUri, ...sandbox });
export const FsReadFileResult = z.object({ dataBase64: Base64 });

/**
 * `dataBase64` is checked by the server, not the schema: the reference answers bad base64 here with
 * -32600 `fs/writeFile requires valid base64 dataBase64: …` (elsewhere it is a -32602 params error).
 */
export const FsWriteFileParams = z.object({ path: PathUri, dataBase64: z.string(), ...sandbox });

/** Omitted `recursive` behaves as `true` (mkdir -p). */
export const FsCreateDirectoryParams = z.object({ path: PathUri, recursive: z.boolean().nullable().optional(), ...sandbox });

export const FsGetMetadataParams = z.object({ path: PathUri, followSymlinks: z.boolean().nullable().optional(), ...sandbox });
export const FsGetMetadataResult = z.object({
  isDirectory: z.boolean(),
  isFile: z.boolean(),
  isSymlink: z.boolean(),
  size: U64,
  createdAtMs: z.number().int(),
  modifiedAtMs: z.number().int(),
});
export type FsMetadata = z.infer<typeof FsGetMetadataResult>;

export const FsReadDirectoryParams = z.object({ path: PathUri, ...sandbox });
export const FsDirectoryEntry = z.object({ fileName: z.string(), isDirectory: z.boolean(), isFile: z.boolean() });
export type FsDirectoryEntry = z.infer<typeof FsDirectoryEntry>;
export const FsReadDirectoryResult = z.object({ entries: z.array(FsDirectoryEntry) });

export const FsCanonicalizeParams = z.object({ path: PathUri, ...sandbox });
export const FsCanonicalizeResult = z.object({ path: PathUri });

export const FsCopyParams = z.object({ sourcePath: PathUri, destinationPath: PathUri, recursive: z.boolean(), ...sandbox });

/** Omitted flags behave as `recursive: true, force: true`. */
export const FsRemoveParams = z.object({
  path: PathUri,
  recursive: z.boolean().nullable().optional(),
  force: z.boolean().nullable().optional(),
  ...sandbox,
});

export const FsOpenMode = z.enum(['read', 'replace']);
export const FsOpenParams = z.object({
  /** Client-chosen; must not be in use on this connection's session. */
  handleId: z.string(),
  path: PathUri,
  /** Default `read`. `replace` creates or truncates at once. `null` is refused, as by the reference. */
  mode: FsOpenMode.optional(),
  ...sandbox,
});
export const FsOpenResult = z.object({ handleId: z.string() });

/** `len` is 1..=1 MiB (the reference's bound); `eof` is true when fewer than `len` bytes came back. */
export const FsReadBlockParams = z.object({ handleId: z.string(), offset: U64, len: U64 });
export const FsReadBlockResult = z.object({ chunk: Base64, eof: z.boolean() });

/** Needs a handle opened with `mode: "replace"`. `chunk` is base64, decoded (and refused) by the server. */
export const FsWriteBlockParams = z.object({ handleId: z.string(), offset: U64, chunk: z.string() });

export const FsCloseParams = z.object({ handleId: z.string() });

/**
 * `fs/walk`: a bounded breadth-first listing below `path` (entries sorted by name within each
 * directory; symlinks are skipped unless they lead to a directory and `followDirectorySymlinks`).
 * The four limits are required; the server refuses 0 and anything above depth 64 / 10 000
 * directories / 50 000 entries with -32600.
 */
export const FsWalkOptions = z.object({
  maxDepth: U64,
  /** Directories that may be listed, the root included. */
  maxDirectories: U64,
  /** Directory entries that may be examined. */
  maxEntries: U64,
  followDirectorySymlinks: z.boolean(),
  /** Hidden directories are still listed but not descended into. */
  pruneHiddenDirectories: z.boolean().optional(),
});
export type FsWalkOptions = z.infer<typeof FsWalkOptions>;
export const FsWalkParams = z.object({ path: PathUri, options: FsWalkOptions, ...sandbox });
export const FsWalkEntry = z.object({ path: PathUri, kind: z.enum(['directory', 'file']) });
export type FsWalkEntry = z.infer<typeof FsWalkEntry>;
/** A descendant that could not be examined; the walk goes on. */
export const FsWalkError = z.object({ path: PathUri, message: z.string() });
export const FsWalkResult = z.object({
  entries: z.array(FsWalkEntry),
  errors: z.array(FsWalkError),
  /** A limit (or the 4 MiB response budget) cut the walk short. */
  truncated: z.boolean(),
});
export type FsWalkResult = z.infer<typeof FsWalkResult>;
