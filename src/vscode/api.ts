import type * as vscode from 'vscode';
import type { ExecutorState, Phase } from '../core';

/** The buttons of the approval notification after a denial (or when the executor cannot sandbox), in the order shown. */
export const APPROVAL_CHOICES = ['Run Without Sandbox', 'Always Allow This Command', 'Deny'] as const;
/** The buttons of the `askBeforeRun` notification (nothing has run yet), in the order shown. */
export const BEFORE_RUN_CHOICES = ['Run in Sandbox', 'Run Without Sandbox', 'Always Allow This Command', 'Deny'] as const;
/** After a managed-network denial, shown first: `Allow api.example.com for this workspace`. */
export type AllowHostChoice = `Allow ${string} for this workspace`;
export const allowHostChoice = (host: string): AllowHostChoice => `Allow ${host} for this workspace`;
export type ApprovalChoice = (typeof BEFORE_RUN_CHOICES)[number] | AllowHostChoice;

/** A sandbox question waiting for the user's answer (the notification is on screen). */
export interface PendingApproval {
  /** `denied`: it ran sandboxed and was blocked; `unavailable`: the executor cannot sandbox; `beforeRun`: nothing ran yet. */
  readonly kind: 'denied' | 'unavailable' | 'beforeRun';
  /** The notification's text. */
  readonly message: string;
  readonly executor: string;
  readonly commandLine: string;
  readonly sandboxLabel: string;
  /** Managed network: the host the proxy refused (the notification offers "Allow HOST for this workspace"). */
  readonly deniedHost?: string;
  /** The buttons shown, in order. */
  readonly choices: readonly ApprovalChoice[];
  /** Answers as if the button was clicked (for automation; the notification stays until dismissed). */
  respond(choice: ApprovalChoice): void;
}

/** A remote MCP server's sign-in page (OAuth authorization URL: client id, PKCE challenge, state; no secret). */
export interface SignInPage {
  /** The MCP server's name. */
  readonly server: string;
  readonly url: string;
  /** Opens it yourself: the extension then does not open the browser (automation, extensions that show such pages). */
  claim(): void;
}

/** An Exec Bridge terminal. */
export interface ExecTerminal {
  readonly terminal: vscode.Terminal;
  readonly executor: string;
  readonly commandLine: string;
  /** Everything written to the terminal so far (bounded to the last 256 KiB), escape codes included. */
  text(): string;
  readonly onDidWrite: vscode.Event<string>;
  readonly phase: Phase;
  /** The last process's exit code, once it exited. */
  readonly exitCode: number | undefined;
  /** Whether the current process runs inside the executor's sandbox. */
  readonly sandboxed: boolean;
  /** Resolves when the run is over (exit line shown, failed, or terminal closed). */
  readonly done: Promise<void>;
  /** The process currently behind the terminal (a new one after an approved retry). */
  readonly process: { readonly processId: string; readonly completion: Promise<{ exitCode: number; sandboxDenied: boolean }> } | undefined;
}

/**
 * What `activate` returns: a small surface for other extensions and for our own tests in the
 * extension host. Everything here goes through the same code paths as the commands.
 */
export interface ExecBridgeApi {
  /** How long `activate` took, in milliseconds. */
  readonly activationMs: number;
  /** The extension's log folder (the "Exec Bridge" log file is written there). */
  readonly logUri: vscode.Uri;
  executorNames(): string[];
  readonly activeExecutor: string;
  executorState(name?: string): ExecutorState;
  readonly onDidChangeExecutorState: vscode.Event<{ executor: string; state: ExecutorState }>;
  /** Connects the executor (default: the active one); rejects with a readable message. */
  connect(name?: string): Promise<ExecutorState>;
  /** The pid of the bundled exec-server while it runs. */
  bundledServerPid(): number | undefined;
  /** Exec Bridge terminals, oldest first (closed ones drop out). */
  terminals(): ExecTerminal[];
  readonly onDidOpenTerminal: vscode.Event<ExecTerminal>;
  readonly onDidRequestApproval: vscode.Event<PendingApproval>;
  /** A sign-in to a remote MCP server is about to open its page in the browser ("Sign In…" in the MCP Servers view). */
  readonly onWillOpenSignInPage: vscode.Event<SignInPage>;
}
