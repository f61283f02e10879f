import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { RpcError } from '../rpc';
import { resolveReal, type FsSandbox } from './fsSandbox';
import { ioErrorToRpc } from './rustCompat';

/*
 * What every `fs/*` method shares: wire path URIs checked and decoded as the reference does, the
 * real path of a path for a sandboxed call, and OS errors turned into the reference's errors.
 */

const hostPlatform = process.platform === 'darwin' ? 'macos' : process.platform;

/**
 * A wire path URI, checked the way the reference deserializes it (-32602 on failure). Whether it
 * names a path on this host is checked later, by `localPath` (-32600), as the reference does.
 */
export function parsePathUri(uri: string): URL {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    const hasScheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri);
    throw RpcError.invalidParams(hasScheme ? 'invalid URI: invalid international domain name' : 'invalid URI: relative URL without a base');
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'file') throw RpcError.invalidParams(`unsupported path URI scheme \`${scheme}\``);
  // WHATWG URL drops an empty `?`/`#`; the reference refuses those too.
  const beforeHash = url.href.split('#', 1)[0]!;
  if (url.search !== '' || beforeHash.includes('?')) throw RpcError.invalidParams('query parameters are not allowed in path URIs');
  if (url.hash !== '' || url.href.includes('#')) throw RpcError.invalidParams('fragments are not allowed in path URIs');
  if (percentDecode(url.pathname).includes('\0')) throw RpcError.invalidParams(`'${url.href}' is invalid on '${hostPlatform}'`);
  return url;
}

/** The absolute local path of a parsed URI; a URI with a host (other than localhost) is not local. */
export function localPath(url: URL): string {
  if (url.hostname !== '') throw RpcError.invalidRequest(`'${url.href}' is invalid on '${hostPlatform}'`);
  return percentDecode(url.pathname);
}

/** Decodes `%XX` escapes to bytes (then UTF-8); malformed escapes stay literal, as in the reference. */
function percentDecode(s: string): string {
  if (!s.includes('%')) return s;
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      out.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      for (const b of Buffer.from(s[i]!)) out.push(b);
    }
  }
  return Buffer.from(out).toString('utf8');
}

export function toPath(uri: string): string {
  return localPath(parsePathUri(uri));
}

/** Runs a file-system step, turning OS errors into the reference's JSON-RPC errors. */
export async function io<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    throw ioErrorToRpc(e);
  }
}

export function isErrno(e: unknown, code: string): boolean {
  return (e as NodeJS.ErrnoException | null)?.code === code;
}

/** The real path of `path` for a sandboxed call; a path the sandbox cannot see fails as unseen. */
export async function resolveFor(sb: FsSandbox, path: string, followFinal: boolean): Promise<string> {
  try {
    return await resolveReal(path, followFinal);
  } catch (e) {
    sb.checkRead(path);
    throw e;
  }
}

/** `path` itself (a final link not followed), with its directory resolved. */
export async function resolveEntryFor(sb: FsSandbox, path: string): Promise<string> {
  if (path === '/') return '/';
  return join(await resolveFor(sb, dirname(path), true), basename(path));
}

export function isMissing(e: unknown): boolean {
  return isErrno(e, 'ENOENT');
}

export async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await fsp.lstat(path);
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
}
