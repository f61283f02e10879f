import type { z } from 'zod';

/**
 * Turns a zod failure into a one-line message in the style of the real server's serde errors
 * (`missing field \`tty\``, `invalid type: number, expected a string`, `unknown variant …`), so
 * that users see the same words whichever server they talk to.
 */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid params';
  const where = issue.path.length > 0 ? ` at \`${issue.path.map(String).join('.')}\`` : '';
  const missing = (issue as { input?: unknown }).input === undefined && issue.path.length > 0;
  if (missing && (issue.code === 'invalid_type' || issue.code === 'invalid_value')) {
    return `missing field \`${String(issue.path[issue.path.length - 1])}\``;
  }
  switch (issue.code) {
    case 'invalid_type': {
      const input = (issue as { input?: unknown }).input;
      return `invalid type: ${describeValue(input)}, expected ${article(issue.expected)}`;
    }
    case 'invalid_value': {
      const input = (issue as { input?: unknown }).input;
      const values = (issue as { values?: unknown[] }).values ?? [];
      return `unknown variant \`${String(input)}\`, expected ${values.map((v) => `\`${String(v)}\``).join(' or ')}`;
    }
    case 'too_small':
    case 'too_big':
      return `invalid value${where}: ${issue.message}`;
    default:
      return `${issue.message}${where}`;
  }
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'sequence';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'object') return 'map';
  return typeof v;
}

function article(expected: string): string {
  switch (expected) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'a map';
    case 'array':
      return 'a sequence';
    default:
      return expected;
  }
}
