import { z } from 'zod';
import { Base64, OutputStream, PathUri, ProcessId, U64 } from './common';
import { SandboxContext } from './sandbox';

/**
 * Variable name → value. Not `z.record`: it drops a key named `__proto__`, and that is a valid
 * variable name. The result has no prototype, so every name is an ordinary key.
 */
export const EnvMap = z
  .custom<Record<string, string>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
    message: 'Invalid input: expected record',
  })
  .transform((v, ctx) => {
    const out = Object.create(null) as Record<string, string>;
    for (const [k, s] of Object.entries(v)) {
      if (typeof s === 'string') out[k] = s;
      else
        ctx.issues.push({
          code: 'invalid_type',
          expected: 'string',
          input: s,
          path: [k],
          message: `Invalid input: expected string, received ${s === null ? 'null' : typeof s}`,
        });
    }
    return out;
  });

/** Build the child environment from the server's own, then overlay `env` (which wins over `set`). */
export const EnvPolicy = z.object({
  inherit: z.enum(['all', 'core', 'none']),
  ignoreDefaultExcludes: z.boolean(),
  exclude: z.array(z.string()),
  set: EnvMap,
  includeOnly: z.array(z.string()),
});
export type EnvPolicy = z.infer<typeof EnvPolicy>;

export const SandboxType = z.enum(['none', 'macosSeatbelt', 'linuxSeccomp', 'windowsRestrictedToken']);
export type SandboxType = z.infer<typeof SandboxType>;

/** Our extension: initial PTY size (the real server ignores it and uses 80x24). */
export const PtySize = z.object({ cols: z.number().int().min(1).max(10_000), rows: z.number().int().min(1).max(10_000) });
export type PtySize = z.infer<typeof PtySize>;

/** A credit window in bytes (docs/protocol-extensions.md, "Credit window"). */
export const CreditWindowBytes = z
  .number()
  .int()
  .min(1)
  .max(1024 * 1024 * 1024);

export const ProcessStartParams = z.object({
  processId: ProcessId,
  /** Non-empty; argv[0] is resolved through PATH. */
  argv: z.array(z.string()),
  cwd: PathUri,
  /** The complete child environment when `envPolicy` is absent; an overlay otherwise. */
  env: EnvMap,
  tty: z.boolean(),
  /** Non-tty only: keep stdin as a writable pipe (else /dev/null). */
  pipeStdin: z.boolean().optional().default(false),
  /** Overrides argv[0] as the child sees it. */
  arg0: z.string().nullable().optional(),
  envPolicy: EnvPolicy.nullable().optional(),
  /** Executor-side sandbox intent (codex's FileSystemSandboxContext, see ./sandbox). Absent or null: no sandbox. */
  sandbox: SandboxContext.nullable().optional(),
  enforceManagedNetwork: z.boolean().optional(),
  managedNetwork: z.unknown().optional(),
  networkProxy: z.unknown().optional(),
  shellSnapshot: z.unknown().optional(),
  metadata: z.unknown().optional(),
  /** Ours: initial PTY size for `tty: true` (default 80x24). */
  ptySize: PtySize.nullable().optional(),
  /**
   * Ours (capability `execBridgeProcessCredit`): read this process's output only while fewer than
   * this many of its bytes are unacknowledged (`process/ack`). Absent or null: no credit.
   */
  execBridgeCreditWindow: CreditWindowBytes.nullable().optional(),
  /**
   * Ours: report each destination the managed network's proxy refuses while the process runs, as
   * `execBridge/sandboxBlocked` (a long-lived process such as an MCP server does not exit on it).
   */
  execBridgeReportBlocked: z.boolean().optional(),
});
export type ProcessStartParams = z.input<typeof ProcessStartParams>;
export type ProcessStartRequest = z.output<typeof ProcessStartParams>;

export const ProcessStartResult = z.object({
  processId: ProcessId,
  /** Older servers omit it. */
  sandboxType: SandboxType.optional(),
});
export type ProcessStartResult = z.infer<typeof ProcessStartResult>;

export const ProcessReadParams = z.object({
  processId: ProcessId,
  /** Only chunks with seq > afterSeq (default 0). */
  afterSeq: U64.nullable().optional(),
  /** Byte budget over decoded bytes; at least one whole chunk is returned if any is available. */
  maxBytes: U64.nullable().optional(),
  /** Long poll: wait up to this long for new output or a terminal event. */
  waitMs: U64.nullable().optional(),
  /** Ours (`execBridgeOutputSpool`): the byte budget of a page (`execBridgeSpooled`), of the spool or of the window; at least one chunk. */
  execBridgeSpoolMaxBytes: U64.optional(),
});
export type ProcessReadParams = z.input<typeof ProcessReadParams>;

export const OutputChunk = z.object({ seq: U64, stream: OutputStream, chunk: Base64 });
export type OutputChunk = z.infer<typeof OutputChunk>;

export const ProcessReadResult = z.object({
  chunks: z.array(OutputChunk),
  /** Cursor for the next call (pass `afterSeq = nextSeq - 1`). */
  nextSeq: U64,
  exited: z.boolean(),
  exitCode: z.number().int().nullable(),
  closed: z.boolean(),
  failure: z.string().nullable().optional(),
  sandboxDenied: z.boolean().optional().default(false),
  /** Ours: the managed network's proxy refused this destination (`host:port`); set only with `sandboxDenied`. */
  sandboxDeniedTarget: z.string().optional(),
  /**
   * Ours, only to a connection that asked for `execBridgeOutputSpool` (./session.ts): a page of
   * retained output (from the spool, or of the window within `execBridgeSpoolMaxBytes`) and newer
   * output follows; read on from `nextSeq`. Such a page is every seq from its first chunk to
   * `nextSeq - 1`, except `execBridgeExitSeq`.
   */
  execBridgeSpooled: z.boolean().optional(),
  /** Ours, with `execBridgeOutputSpool`: output bytes the server no longer holds (older than all it holds; a cap dropped them). */
  execBridgeDroppedBytes: U64.optional(),
  /** Ours, with `execBridgeOutputSpool`: output bytes the process produced in all (it holds this minus `execBridgeDroppedBytes`). */
  execBridgeOutputBytes: U64.optional(),
  /** Ours, with `execBridgeOutputSpool`: the seq of `exited`, once the process exited. */
  execBridgeExitSeq: U64.optional(),
});
export type ProcessReadResult = z.infer<typeof ProcessReadResult>;

export const ProcessWriteParams = z.object({
  processId: ProcessId,
  chunk: Base64,
  /** Idempotency key per process: a repeated id is answered `accepted` and not written again. */
  writeId: z.string(),
});
export type ProcessWriteParams = z.input<typeof ProcessWriteParams>;

export const WriteStatus = z.enum(['accepted', 'unknownProcess', 'stdinClosed', 'starting']);
export type WriteStatus = z.infer<typeof WriteStatus>;
export const ProcessWriteResult = z.object({ status: WriteStatus });
export type ProcessWriteResult = z.infer<typeof ProcessWriteResult>;

export const ProcessSignalParams = z.object({ processId: ProcessId, signal: z.enum(['interrupt']) });
export type ProcessSignalParams = z.input<typeof ProcessSignalParams>;
export const ProcessSignalResult = z.object({});

export const ProcessTerminateParams = z.object({ processId: ProcessId });
export type ProcessTerminateParams = z.input<typeof ProcessTerminateParams>;
export const ProcessTerminateResult = z.object({ running: z.boolean() });
export type ProcessTerminateResult = z.infer<typeof ProcessTerminateResult>;

/** Ours (announced as capability `processResize`): resize a PTY process. */
export const ProcessResizeParams = z.object({
  processId: ProcessId,
  cols: z.number().int().min(1).max(10_000),
  rows: z.number().int().min(1).max(10_000),
});
export type ProcessResizeParams = z.input<typeof ProcessResizeParams>;
export const ProcessResizeResult = z.object({});

/**
 * Ours (announced as capability `execBridgeProcessPause`): `process/pause` stops reading the
 * process's output on the server (the child blocks once its pipe or PTY buffer is full; nothing is
 * dropped), `process/resume` reads again. Both answer `{}`; a pause lasts until resumed, also while
 * the session is detached (docs/protocol-extensions.md, "Per-process flow control").
 */
export const ProcessFlowParams = z.object({ processId: ProcessId });
export type ProcessFlowParams = z.input<typeof ProcessFlowParams>;
export const ProcessFlowResult = z.object({});

/**
 * Ours (announced as capability `execBridgeProcessCredit`): every output event of the process with
 * seq ≤ `seq` was consumed. `window` (when present) sets the credit window in bytes, null turns the
 * credit off (the server reads freely again). Idempotent; answers `{}`.
 */
export const ProcessAckParams = z.object({
  processId: ProcessId,
  seq: U64,
  window: CreditWindowBytes.nullable().optional(),
});
export type ProcessAckParams = z.input<typeof ProcessAckParams>;
export const ProcessAckResult = z.object({});

// Notifications (server → client). Output, exited and closed share one per-process seq; closed is last.
export const ProcessOutputNotification = z.object({
  processId: ProcessId,
  seq: U64,
  stream: OutputStream,
  chunk: Base64,
});
export type ProcessOutputNotification = z.infer<typeof ProcessOutputNotification>;

export const ProcessExitedNotification = z.object({
  processId: ProcessId,
  seq: U64,
  exitCode: z.number().int(),
  /** Absent on older servers: the client may ask `process/read` once to learn it. */
  sandboxDenied: z.boolean().optional(),
  /** Ours: the managed network's proxy refused this destination (`host:port`). */
  sandboxDeniedTarget: z.string().optional(),
});
export type ProcessExitedNotification = z.infer<typeof ProcessExitedNotification>;

/** Ours (asked for with `execBridgeReportBlocked`): the process's managed network refused `target` (`host:port`) just now. */
export const SandboxBlockedNotification = z.object({
  processId: ProcessId,
  target: z.string(),
  reason: z.string(),
});
export type SandboxBlockedNotification = z.infer<typeof SandboxBlockedNotification>;
export const SANDBOX_BLOCKED = 'execBridge/sandboxBlocked';

export const ProcessClosedNotification = z.object({
  processId: ProcessId,
  /** Older servers omit it. */
  seq: U64.optional(),
});
export type ProcessClosedNotification = z.infer<typeof ProcessClosedNotification>;
