/**
 * Retry delays: linear steps capped at `maxMs`, plus per-client jitter so that many clients
 * reconnecting to one server after an outage do not retry in lock-step.
 */
export function backoffDelay(attempt: number, opts: { stepMs: number; maxMs: number; jitter: number }): number {
  const base = Math.min(opts.maxMs, opts.stepMs * Math.max(1, attempt));
  return Math.round(base * (1 + opts.jitter));
}
