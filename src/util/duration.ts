/** `25 s`, `12 min`, `10 h`: a duration in words (TTLs, recovery deadlines). */
export function formatDuration(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}
