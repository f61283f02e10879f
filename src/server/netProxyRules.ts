import { isIP } from 'node:net';

/*
 * The managed network's allow- and deny-lists: `host`, `*.host` (subdomains only), an IP literal
 * (`127.0.0.1`, `::1`, `[::1]`), each with an optional `:port`. A destination is allowed when an
 * allow rule matches and no deny rule does (deny wins). Names are matched case-insensitively,
 * without a trailing dot. Pure, so it is unit-tested directly (test/unit/sandbox/netRules.test.ts).
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
    if (isIP(host) !== 6) throw new NetRuleError(`${s}: only an IPv6 address goes in brackets`);
  } else if (isIP(s) === 6) {
    host = s;
  } else {
    const colon = s.lastIndexOf(':');
    if (colon >= 0) {
      host = s.slice(0, colon);
      port = parsePort(s.slice(colon + 1), s);
    }
  }
  if (isIP(host)) return { host: normalizeIp(host), wildcard: false, ip: true, port };
  let wildcard = false;
  if (host.startsWith('*.')) {
    wildcard = true;
    host = host.slice(2);
  }
  host = host.toLowerCase().replace(/\.$/, '');
  if (!/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(host) || host.length > 253)
    throw new NetRuleError(`${s}: not a host name, *.name or IP address (with an optional :port)`);
  return { host, wildcard, ip: false, port };
}

function parsePort(p: string, rule: string): number {
  const n = Number(p);
  if (!/^\d{1,5}$/.test(p) || n < 1 || n > 65535) throw new NetRuleError(`${rule}: the port must be 1-65535`);
  return n;
}

/** Lower-case, IPv4-mapped IPv6 as IPv4, IPv6 in its shortest form. */
export function normalizeIp(ip: string): string {
  let a = ip.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!;
  if (isIP(a) === 6) {
    try {
      a = new URL(`http://[${a}]/`).hostname.slice(1, -1);
    } catch {
      // keep as given
    }
  }
  return a;
}

/** The normalised host of a destination (names lower-case without a trailing dot, IPs normalised). */
export function normalizeHost(host: string): string {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  return isIP(h) ? normalizeIp(h) : h.toLowerCase().replace(/\.$/, '');
}

export function ruleMatches(rule: NetRule, host: string, port: number): boolean {
  if (rule.port !== undefined && rule.port !== port) return false;
  const h = normalizeHost(host);
  if (rule.ip) return h === rule.host;
  if (rule.wildcard) return h.endsWith(`.${rule.host}`);
  return h === rule.host;
}

/** Addresses a permitted *name* may not resolve to unless that literal address is allowed itself. */
export function isSpecialAddress(ip: string): boolean {
  const a = normalizeIp(ip);
  if (isIP(a) === 4) {
    const [x, y] = a.split('.').map(Number) as [number, number];
    return x === 127 || x === 0 || (x === 169 && y === 254) || a === '100.100.100.200';
  }
  return a === '::1' || a === '::' || /^fe[89ab][0-9a-f]:/.test(a) || a === 'fd00:ec2::254';
}

export class NetPolicy {
  readonly allow: NetRule[];
  readonly deny: NetRule[];

  constructor(allow: readonly string[], deny: readonly string[] = []) {
    this.allow = allow.map(parseNetRule);
    this.deny = deny.map(parseNetRule);
  }

  /** By name (before any resolution): allowed, or why not. */
  check(host: string, port: number): { ok: true } | { ok: false; reason: string } {
    if (this.deny.some((r) => ruleMatches(r, host, port))) return { ok: false, reason: 'it is on the deny-list' };
    if (!this.allow.some((r) => ruleMatches(r, host, port))) return { ok: false, reason: 'it is not on the allow-list' };
    return { ok: true };
  }

  /** After resolving a permitted name: a special address must be listed as a literal itself. */
  checkResolved(address: string, port: number): { ok: true } | { ok: false; reason: string } {
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
