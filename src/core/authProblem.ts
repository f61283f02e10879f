/**
 * A connect failure that a token fixes: the executor refused the WebSocket upgrade with HTTP 401
 * (or 403). Says whether a token is stored for it, and what to do (the UI offers "Set Token…").
 */
export function authProblem(executor: string, message: string, tokenStored: boolean): string | undefined {
  const m = /refused the WebSocket upgrade: HTTP (401|403)\b/.exec(message);
  if (!m) return undefined;
  return tokenStored
    ? `${executor} refused the stored token (HTTP ${m[1]}): it is wrong or expired. Set the right one with "Set Token…".`
    : `${executor} needs a token (HTTP ${m[1]}), and none is stored for it. "Set Token…" stores one in VS Code's secret storage.`;
}
