import type { RunDecision } from './runApprovals';

/** What the approval rules did, said to a model (which acts on it: retry, change course, ask the user). */
export function decisionText(d: RunDecision, sandboxLabel: string): string {
  switch (d.kind) {
    case 'beforeRun':
      switch (d.outcome.reason) {
        case 'alwaysAllowed':
          return 'The user always allows this command in this workspace, so it ran without the sandbox.';
        case 'runSandboxed':
          return `The user approved running it in the sandbox (${sandboxLabel}).`;
        case 'approvedOnce':
        case 'approvedAlways':
          return `The user approved running it without the sandbox (${d.outcome.note}).`;
        case 'denied':
        case 'dismissed':
        case 'cancelled':
          return `The user was asked before it ran (approval policy askBeforeRun) and did not allow it (${d.outcome.note}): nothing ran. Do not run it again unless the user asks for it.`;
        case 'default':
          return '';
      }
      break;
    case 'denied': {
      const what = `The sandbox (${sandboxLabel}) blocked ${d.deniedHost ? `the connection to ${d.deniedHost}` : 'the command'} (exit code ${d.exitCode}).`;
      const o = d.outcome;
      if (o.approved) {
        const who =
          o.reason === 'autoApprove' ? 'It was approved automatically (approval policy autoApprove)' : `The user approved it (${o.note})`;
        return `${what} ${who}, and it was run again without the sandbox.`;
      }
      if (o.reason === 'allowedHost')
        return `${what} The user allowed ${o.allowedHost} for this workspace, and it was run again in the sandbox with it allowed.`;
      if (o.reason === 'never')
        return `${what} The approval policy is "never": it was not re-run without the sandbox. Work within the sandbox.`;
      if (o.reason === 'cancelled') return `${what} The approval was withdrawn (${o.note}).`;
      return `${what} The user refused to run it without the sandbox (${o.note}). Do not retry it unsandboxed; do the work within what the sandbox allows (${sandboxLabel}), or ask the user.`;
    }
    case 'unavailable': {
      const what = `The executor cannot sandbox this command (${d.reason}).`;
      if (d.outcome.approved)
        return `${what} ${d.outcome.reason === 'autoApprove' ? 'It was approved automatically' : `The user approved it (${d.outcome.note})`}, and it ran without the sandbox.`;
      return `${what} It did not run: ${d.outcome.note}.`;
    }
  }
  return '';
}
