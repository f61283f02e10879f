import { fileURLToPath, pathToFileURL } from 'node:url';
import { RpcError } from '../rpc';
import { errorMessage } from '../util';

/**
 * Turns a wire `PathUri` into an absolute local path, with the real server's error messages
 * (docs/protocol.md §2 "Paths"): a plain or relative path is "relative URL without a base",
 * a `file://relative` host is "not valid on this exec-server host". `file://localhost/x` is `/x`.
 */
export function pathFromUri(uri: string, field = 'path'): string {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw RpcError.invalidParams('invalid URI: relative URL without a base');
  }
  if (url.protocol !== 'file:') {
    throw RpcError.invalidParams(`${field} URI \`${uri}\` is not a file URI`);
  }
  if (url.hostname !== '' && url.hostname !== 'localhost') {
    throw RpcError.invalidParams(
      `${field} URI \`${uri}\` is not valid on this exec-server host: '${uri}' is invalid on '${process.platform}'`,
    );
  }
  try {
    return fileURLToPath(url.hostname === 'localhost' ? `file://${url.pathname}` : url);
  } catch (e) {
    throw RpcError.invalidParams(`${field} URI \`${uri}\` is not valid on this exec-server host: ${errorMessage(e)}`);
  }
}

export function uriFromPath(path: string): string {
  return pathToFileURL(path).href;
}
