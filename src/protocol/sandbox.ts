import { z } from 'zod';
import { PathUri } from './common';

/*
 * The `sandbox` field of `process/start`: codex's `FileSystemSandboxContext`, exactly as the 0.171.0
 * binary parses it (probed field by field; see docs/sandbox.md). It is portable *intent*: the
 * executor picks the technology (bwrap on Linux, Seatbelt on macOS) and answers `sandboxType`.
 * Every path inside is a `file://` URI. Enum spellings are codex's: snake_case tags and variants,
 * except `windowsSandboxLevel` (kebab-case) and the camelCase top-level keys.
 * Unknown keys are ignored (stripped), as serde does.
 */

/** Symbolic path tokens, resolved on the executor. */
export const FileSystemSpecialPath = z.discriminatedUnion('kind', [
  /** The whole filesystem. */
  z.object({ kind: z.literal('root') }),
  /** The system directories a program needs to start (/usr, /bin, /lib*, /etc, …). */
  z.object({ kind: z.literal('minimal') }),
  /** `sandbox.cwd` (or the process cwd). */
  z.object({ kind: z.literal('current_working_directory') }),
  /** Each of `sandbox.workspaceRoots` (ours: `sandbox.cwd` when there are none), optionally a subpath. */
  z.object({ kind: z.literal('project_roots'), subpath: z.string().nullable().optional() }),
  /** `sandbox.temporaryDirectories`, else the child's `$TMPDIR`. */
  z.object({ kind: z.literal('tmpdir') }),
  /** `/tmp`. */
  z.object({ kind: z.literal('slash_tmp') }),
  /** A token from a newer codex: ignored for read/write (less access), refused for deny. */
  z.object({ kind: z.literal('unknown'), path: z.string(), subpath: z.string().nullable().optional() }),
]);
export type FileSystemSpecialPath = z.infer<typeof FileSystemSpecialPath>;

export const FileSystemPath = z.discriminatedUnion('type', [
  z.object({ type: z.literal('path'), path: PathUri }),
  z.object({ type: z.literal('glob_pattern'), pattern: z.string() }),
  z.object({ type: z.literal('special'), value: FileSystemSpecialPath }),
]);
export type FileSystemPath = z.infer<typeof FileSystemPath>;

/** `none` is codex's legacy spelling of `deny`. For equally specific entries: deny > write > read. */
export const FileSystemAccessMode = z.enum(['read', 'write', 'deny', 'none']);
export type FileSystemAccessMode = z.infer<typeof FileSystemAccessMode>;

export const FileSystemSandboxEntry = z.object({ path: FileSystemPath, access: FileSystemAccessMode });
export type FileSystemSandboxEntry = z.infer<typeof FileSystemSandboxEntry>;

export const ManagedFileSystemPermissions = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('restricted'),
    entries: z.array(FileSystemSandboxEntry),
    /** Codex: a non-zero depth for glob scans. Accepted; globs are refused by our executor. */
    glob_scan_max_depth: z.number().int().positive().nullable().optional(),
  }),
  z.object({ type: z.literal('unrestricted') }),
]);
export type ManagedFileSystemPermissions = z.infer<typeof ManagedFileSystemPermissions>;

export const NetworkSandboxPolicy = z.enum(['restricted', 'enabled']);
export type NetworkSandboxPolicy = z.infer<typeof NetworkSandboxPolicy>;

export const PermissionProfile = z.discriminatedUnion('type', [
  /** The executor builds the sandbox from these permissions. */
  z.object({ type: z.literal('managed'), file_system: ManagedFileSystemPermissions, network: NetworkSandboxPolicy }),
  /** No sandbox at all. */
  z.object({ type: z.literal('disabled') }),
  /** The filesystem is isolated by someone else; only the network policy applies. */
  z.object({ type: z.literal('external'), network: NetworkSandboxPolicy }),
]);
export type PermissionProfile = z.infer<typeof PermissionProfile>;

export const WindowsSandboxLevel = z.enum(['disabled', 'restricted-token', 'elevated', 'mxc']);
export type WindowsSandboxLevel = z.infer<typeof WindowsSandboxLevel>;

export const SandboxContext = z.object({
  permissions: PermissionProfile,
  /** Anchor for `current_working_directory` (the process may run elsewhere). */
  cwd: PathUri.nullable().optional(),
  /** What `project_roots` means. Codex 0.171 drops `project_roots` entries when this is empty. */
  workspaceRoots: z.array(PathUri).nullable().optional(),
  userHomeDir: PathUri.nullable().optional(),
  temporaryDirectories: z.array(PathUri).nullable().optional(),
  /** Required by codex; ours defaults it to `disabled` (it only matters on Windows). */
  windowsSandboxLevel: WindowsSandboxLevel.optional().default('disabled'),
  windowsSandboxPrivateDesktop: z.boolean().nullable().optional(),
  useLegacyLandlock: z.boolean().nullable().optional(),
});
/** What a client sends. */
export type SandboxContextInput = z.input<typeof SandboxContext>;
/** What a server sees after parsing. */
export type SandboxContext = z.output<typeof SandboxContext>;

/**
 * Ours: the managed network's lists, sent as `process/start`'s `managedNetwork` together with
 * `enforceManagedNetwork: true` and a sandbox whose network is `restricted`. Each entry is `host`,
 * `*.host` (subdomains), or an IP literal (`[v6]` with a port), each with an optional `:port`;
 * `deny` wins over `allow`. The executor runs the proxies and gives the command the proxy
 * environment (docs/sandbox.md, "Managed network").
 */
export const ManagedNetworkLists = z.object({
  allow: z.array(z.string()).max(1000),
  deny: z.array(z.string()).max(1000).optional(),
});
export type ManagedNetworkLists = z.infer<typeof ManagedNetworkLists>;

/**
 * Codex's `ManagedNetworkSandboxContext` (the prepared proxy context), exactly as the 0.171.0
 * binary parses `process/start`'s `managedNetwork` (probed over the wire; serde's errors named each
 * field and type). Codex's orchestrator runs the proxy itself and puts its `127.0.0.1:PORT` in the
 * command's env (`HTTP_PROXY`, `ALL_PROXY`, …); this says which loopback ports the sandbox must let
 * through. Every field is optional (serde defaults); unknown keys are ignored. With
 * `enforceManagedNetwork: true` our executor lets exactly these ports through to the host's loopback
 * and checks that every proxy variable of the env names one of them (docs/sandbox.md).
 */
export const ManagedNetworkSandboxContext = z.object({
  /** Host loopback TCP ports the command may reach (the orchestrator's proxy listeners). */
  loopbackPorts: z.array(z.number().int().min(0).max(65535)).max(64).optional().default([]),
  /** Whether the command may bind local ports and talk over loopback. */
  allowLocalBinding: z.boolean().optional().default(false),
  /** Unix socket paths the command may connect to (refused by our executor when non-empty). */
  allowUnixSockets: z.array(z.string()).optional().default([]),
  /** Every unix socket (refused by our executor). */
  dangerouslyAllowAllUnixSockets: z.boolean().optional().default(false),
});
export type ManagedNetworkSandboxContext = z.output<typeof ManagedNetworkSandboxContext>;

/**
 * `process/start`'s `managedNetwork`: our lists (they have `allow`), else codex's prepared context.
 * Read only together with `enforceManagedNetwork: true` (codex, too, ignores it otherwise).
 */
export const ManagedNetworkField = z.union([ManagedNetworkLists, ManagedNetworkSandboxContext]);
export type ManagedNetworkField = z.output<typeof ManagedNetworkField>;

/** Which of the two a parsed `managedNetwork` is. */
export function isManagedNetworkLists(v: ManagedNetworkField): v is ManagedNetworkLists {
  return Array.isArray((v as { allow?: unknown }).allow);
}

/** The three policies users pick from (settings, `exec-bridge run --sandbox`). */
export const SandboxPolicyName = z.enum(['read-only', 'workspace-write', 'full-access']);
export type SandboxPolicyName = z.infer<typeof SandboxPolicyName>;

export interface SandboxIntent {
  policy: SandboxPolicyName;
  /** Network on (default off). */
  network?: boolean;
  /** `file://` URI the policy is anchored at (usually the command's cwd). */
  cwd: string;
  /** `file://` URIs made writable under `workspace-write` (default: `[cwd]`). */
  workspaceRoots?: string[];
  /** Extra writable `file://` URIs under `workspace-write`. */
  writableRoots?: string[];
  /** `file://` URIs kept read-only even inside a writable root (beyond the built-in carve-outs). */
  readOnlyPaths?: string[];
}

const special = (value: FileSystemSpecialPath): FileSystemPath => ({ type: 'special', value });

/**
 * Builds the codex-shaped `sandbox` value for a policy, so the same request works against our
 * exec-server and `codex exec-server`. Full access with the network on is an explicit "no sandbox".
 */
export function sandboxForPolicy(intent: SandboxIntent): SandboxContextInput {
  const network: NetworkSandboxPolicy = intent.network ? 'enabled' : 'restricted';
  const base = { cwd: intent.cwd, windowsSandboxLevel: 'disabled' as const };
  if (intent.policy === 'full-access') {
    if (intent.network) return { ...base, permissions: { type: 'disabled' } };
    return { ...base, permissions: { type: 'managed', file_system: { type: 'unrestricted' }, network } };
  }
  const entries: FileSystemSandboxEntry[] = [{ path: special({ kind: 'root' }), access: 'read' }];
  let workspaceRoots: string[] | undefined;
  if (intent.policy === 'workspace-write') {
    workspaceRoots = intent.workspaceRoots && intent.workspaceRoots.length > 0 ? intent.workspaceRoots : [intent.cwd];
    entries.push(
      { path: special({ kind: 'project_roots' }), access: 'write' },
      { path: special({ kind: 'slash_tmp' }), access: 'write' },
      { path: special({ kind: 'tmpdir' }), access: 'write' },
      ...(intent.writableRoots ?? []).map((p): FileSystemSandboxEntry => ({ path: { type: 'path', path: p }, access: 'write' })),
    );
  }
  entries.push(...(intent.readOnlyPaths ?? []).map((p): FileSystemSandboxEntry => ({ path: { type: 'path', path: p }, access: 'read' })));
  return {
    ...base,
    ...(workspaceRoots ? { workspaceRoots } : {}),
    permissions: { type: 'managed', file_system: { type: 'restricted', entries }, network },
  };
}
