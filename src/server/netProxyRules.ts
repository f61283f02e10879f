import { isIP } from 'node:net';

/*
 * The managed network's allow- and deny-lists: `host`, `*.host` (subdomains only), an IP literal
 * (`127.0.0.1`, `::1`, `[::1]`), each with an optional `:port`. A destination is allowed when an
 * allow rule matches and no deny rule does (deny wins). Names are matched case-insensitively,
 * without a trailing dot. Pure, so it is unit-tested directly (test/unit/sandbox/netRules.test.ts,
 * netHostNames.test.ts).
 *
 * Every destination a client names is first made canonical (`canonicalHost`): a host name of RFC
 * 1123 characters and lengths, or an IP literal in its canonical form; anything else (a NUL or
 * another byte getaddrinfo would stop at or reinterpret, `0x7f.1`, `2130706433`, `0177.0.0.1`, a
 * zone id) is refused before any rule is looked at, and the canonical text is both what the rules
 * match and what the proxy resolves.
 */

export interface NetRule {
  /** Lower-case name without a trailing dot, the part after `*.` for a wildcard, or a normalised IP. */
  host: string;
  wildcard: boolean;
  ip: boolean;
  /** Undefined: any port. */
  port?: number;
}

export class NetRuleError extends Error {}

/** A destination host made canonical, or why it is not one. */
export type CanonicalHost = { ok: true; host: string; ip: boolean } | { ok: false; reason: string };

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Why `name` (lower-case, no trailing dot) is not a host name we resolve, or undefined: RFC 1123
 * letters, digits and hyphens, labels of 1-63 characters, 253 in all; and a last label that is not
 * a number (getaddrinfo reads `2130706433`, `127.1` or `0x7f.1` as an IPv4 address).
 */
export function hostNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'an empty host name';
  if (name.length > 253) return 'a host name longer than 253 characters';
  const labels = name.split('.');
  for (const l of labels) {
    if (l.length === 0) return 'a host name with an empty label';
    if (l.length > 63) return 'a host name label longer than 63 characters';
    if (!LABEL.test(l)) return 'not a host name (letters, digits, hyphens and dots only)';
  }
  if (/^(\d+|0x[0-9a-f]*)$/.test(labels.at(-1)!)) return 'an IP address in a non-canonical form (use a.b.c.d)';
  return undefined;
}

/**
 * A destination host as a client sent it (HTTP request target, CONNECT authority, Host header,
 * SOCKS5 domain or address), made canonical: a canonical IPv4 literal, an IPv6 literal (bracketed
 * or not, no zone id; IPv4-mapped becomes the IPv4 address) in its shortest form, or a host name
 * lower-cased without one trailing dot. Anything else is refused with the reason.
 */
export function canonicalHost(raw: string): CanonicalHost {
  const bracketed = /^\[(.*)\]$/.exec(raw);
  const h = bracketed ? bracketed[1]! : raw;
  const kind = isIP(h);
  if (kind === 6 && !h.includes('%')) return { ok: true, host: normalizeIp(h), ip: true };
  if (bracketed) return { ok: false, reason: 'only an IPv6 address (without a zone id) goes in brackets' };
  if (kind === 4) return { ok: true, host: h, ip: true };
  const name = h.toLowerCase().replace(/\.$/, '');
  const problem = hostNameProblem(name);
  return problem ? { ok: false, reason: problem } : { ok: true, host: name, ip: false };
}

/** Parses one rule; throws `NetRuleError` saying what is wrong. */
export function parseNetRule(text: string): NetRule {
  const s = text.trim();
  if (s === '') throw new NetRuleError('an empty network rule');
  let host = s;
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (bracket) {
    host = bracket[1]!;
    if (bracket[2] !== undefined) port = parsePort(bracket[2], s);
    if (isIP(host) !== 6 || host.includes('%')) throw new NetRuleError(`${s}: only an IPv6 address goes in brackets`);
  } else if (isIP(s) === 6) {
    host = s;
  } else {
    const colon = s.lastIndexOf(':');
    if (colon >= 0) {
      host = s.slice(0, colon);
      port = parsePort(s.slice(colon + 1), s);
    }
  }
  if (host.includes('%')) throw new NetRuleError(`${s}: an IPv6 zone id is not allowed`);
  if (isIP(host)) return { host: normalizeIp(host), wildcard: false, ip: true, port };
  let wildcard = false;
  if (host.startsWith('*.')) {
    wildcard = true;
    host = host.slice(2);
  }
  host = host.toLowerCase().replace(/\.$/, '');
  // The same grammar as a destination (`canonicalHost`): a rule no destination can match is a typo.
  const problem = hostNameProblem(host);
  if (problem) throw new NetRuleError(`${s}: not a host name, *.name or IP address (with an optional :port): ${problem}`);
  return { host, wildcard, ip: false, port };
}

function parsePort(p: string, rule: string): number {
  const n = Number(p);
  if (!/^\d{1,5}$/.test(p) || n < 1 || n > 65535) throw new NetRuleError(`${rule}: the port must be 1-65535`);
  return n;
}

/**
 * Lower-case, IPv6 in its shortest form, IPv4-mapped IPv6 (`::ffff:127.0.0.1`,
 * `0:0:0:0:0:ffff:7f00:1`) as the IPv4 address it is.
 */
export function normalizeIp(ip: string): string {
  const a = ip.toLowerCase();
  if (isIP(a) !== 6) return a;
  let short: string;
  try {
    short = new URL(`http://[${a}]/`).hostname.slice(1, -1);
  } catch {
    return a;
  }
  // The URL serialiser writes a mapped address in hex: ::ffff:7f00:1.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(short);
  if (!mapped) return short;
  const hi = parseInt(mapped[1]!, 16);
  const lo = parseInt(mapped[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The canonical host of a destination (`canonicalHost`), or the raw text lower-cased when it is not one (it then matches no rule). */
export function normalizeHost(host: string): string {
  const c = canonicalHost(host);
  return c.ok ? c.host : host.toLowerCase();
}

export function ruleMatches(rule: NetRule, host: string, port: number): boolean {
  if (rule.port !== undefined && rule.port !== port) return false;
  const c = canonicalHost(host);
  if (!c.ok) return false;
  if (rule.ip !== c.ip) return false;
  if (rule.wildcard) return c.host.endsWith(`.${rule.host}`);
  return c.host === rule.host;
}

/** Addresses a permitted *name* may not resolve to unless that literal address is allowed itself. */
export function isSpecialAddress(ip: string): boolean {
  const a = normalizeIp(ip);
  if (isIP(a) === 4) {
    const [x, y] = a.split('.').map(Number) as [number, number];
    return x === 127 || x === 0 || (x === 169 && y === 254) || a === '100.100.100.200';
  }
  // ::/96 holds ::, ::1 and the IPv4-compatible ::a.b.c.d; fe80::/10 is link-local.
  return /^::([0-9a-f]{1,4}(:[0-9a-f]{1,4})?)?$/.test(a) || /^fe[89ab][0-9a-f]:/.test(a) || a === 'fd00:ec2::254';
}

export type NetVerdict = { ok: true; host: string; ip: boolean } | { ok: false; reason: string; invalid?: true };

export class NetPolicy {
  readonly allow: NetRule[];
  readonly deny: NetRule[];

  constructor(allow: readonly string[], deny: readonly string[] = []) {
    this.allow = allow.map(parseNetRule);
    this.deny = deny.map(parseNetRule);
  }

  /**
   * By name (before any resolution): the canonical host to resolve or connect to, or why not
   * (`invalid`: it is not a host name or IP literal at all, so no rule was looked at).
   */
  check(host: string, port: number): NetVerdict {
    const c = canonicalHost(host);
    if (!c.ok) return { ok: false, reason: c.reason, invalid: true };
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, reason: 'the port must be 1-65535', invalid: true };
    if (this.deny.some((r) => ruleMatches(r, c.host, port))) return { ok: false, reason: 'it is on the deny-list' };
    if (!this.allow.some((r) => ruleMatches(r, c.host, port))) return { ok: false, reason: 'it is not on the allow-list' };
    return c;
  }

  /** After resolving a permitted name: a special address must be listed as a literal itself. */
  checkResolved(address: string, port: number): { ok: true } | { ok: false; reason: string } {
    if (!isIP(address) || address.includes('%')) return { ok: false, reason: `it resolves to ${JSON.stringify(address)}, not an address` };
    if (!isSpecialAddress(address)) {
      return this.deny.some((r) => r.ip && ruleMatches(r, address, port))
        ? { ok: false, reason: `${address} is on the deny-list` }
        : { ok: true };
    }
    const listed = this.allow.some((r) => r.ip && ruleMatches(r, address, port));
    const denied = this.deny.some((r) => r.ip && ruleMatches(r, address, port));
    if (listed && !denied) return { ok: true };
    return { ok: false, reason: `it resolves to ${address} (loopback, link-local or metadata), which is not allowed by its address` };
  }

  /** Whether a loopback literal is on the allow-list (then NO_PROXY does not send loopback around the proxy). */
  get allowsLoopback(): boolean {
    return this.allow.some((r) => r.ip && isSpecialAddress(r.host) && (r.host.startsWith('127.') || r.host === '::1'));
  }

  /** A stable key: the same lists share one proxy. */
  get key(): string {
    return JSON.stringify([this.allow, this.deny]);
  }
}
