/** The message of a thrown value: an Error's `message`, else the value as a string. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  const message = (e as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? message : String(e);
}
