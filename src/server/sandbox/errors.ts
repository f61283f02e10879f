/**
 * A sandboxed start that cannot be honoured; the command did not run. `reason` says what is wrong
 * and how to fix it (a sentence of its own); the message adds that nothing ran. Callers that
 * show the reason (the start-up check, `data.reason` on the wire) use the field, never the text.
 */
export class SandboxUnavailableError extends Error {
  constructor(
    readonly reason: string,
    message = `${reason} The command was not run.`,
  ) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}
