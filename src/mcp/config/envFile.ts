/**
 * Parses a dotenv file: `KEY=value`, optional `export `, `#` comments, single quotes (literal),
 * double quotes (with `\n`, `\t`, `\"`, `\\` escapes and multi-line values).
 */
export function parseEnvFile(text: string): { values: Record<string, string>; errors: string[] } {
  const values: Record<string, string> = {};
  const errors: string[] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('export ')) line = line.slice(7).trimStart();
    const eq = line.indexOf('=');
    const key = eq < 0 ? '' : line.slice(0, eq).trim();
    if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key)) {
      errors.push(`line ${lineNo}: expected KEY=value`);
      continue;
    }
    let rest = line.slice(eq + 1).trimStart();
    const quote = rest[0];
    if (quote === '"' || quote === "'") {
      // A quoted value may span lines until the closing quote.
      let body = rest.slice(1);
      let close = findClosingQuote(body, quote);
      while (close < 0 && i + 1 < lines.length) {
        i++;
        body += '\n' + (lines[i] ?? '');
        close = findClosingQuote(body, quote);
      }
      if (close < 0) {
        errors.push(`line ${lineNo}: unterminated ${quote === '"' ? 'double' : 'single'}-quoted value for ${key}`);
        continue;
      }
      const raw = body.slice(0, close);
      values[key] =
        quote === "'" ? raw : raw.replace(/\\([nrt"\\])/g, (_, c: string) => ({ n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' })[c] ?? c);
    } else {
      const hash = rest.search(/\s#/);
      if (hash >= 0) rest = rest.slice(0, hash);
      values[key] = rest.trim();
    }
  }
  return { values, errors };
}

function findClosingQuote(s: string, quote: string): number {
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && quote === '"') i++;
    else if (s[i] === quote) return i;
  }
  return -1;
}
