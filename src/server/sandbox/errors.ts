/** A sandboxed start that cannot be honoured. The message says what to do; the command did not run. */
export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}
