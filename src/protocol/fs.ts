import { z } from 'zod';
import { Base64, PathUri, U64 } from './common';

// Every fs request also accepts an optional `sandbox` context (ignored by us for now) and results
// are `{}` unless stated. Errors: missing path → -32004, other OS errors → -32603.
const sandbox = { sandbox: z.unknown().optional() };

export const FsReadFileParams = z.object({ path: PathUri, ...sandbox });
export const FsReadFileResult = z.object({ dataBase64: Base64 });

export const FsWriteFileParams = z.object({ path: PathUri, dataBase64: Base64, ...sandbox });

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
  mode: FsOpenMode.nullable().optional(),
  ...sandbox,
});
export const FsOpenResult = z.object({ handleId: z.string() });

export const FsReadBlockParams = z.object({ handleId: z.string(), offset: U64, len: U64 });
export const FsReadBlockResult = z.object({ chunk: Base64, eof: z.boolean() });

export const FsWriteBlockParams = z.object({ handleId: z.string(), offset: U64, chunk: Base64 });

export const FsCloseParams = z.object({ handleId: z.string() });
