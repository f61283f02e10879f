import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import type { FsDirectoryEntry, FsWalkEntry, FsWalkOptions, FsWalkResult } from '../protocol';
import { RpcError } from '../rpc';
import { io, localPath, resolveFor } from './fsPaths';
import { listDirectory, listDirectoryChecked, metadataFollowing, metadataOfAll } from './fsRead';
import type { FsSandbox } from './fsSandbox';
import { describeIoError } from './rustCompat';
import { uriFromPath } from './uri';

const MAX_WALK_DEPTH = 64;
const MAX_WALK_DIRECTORIES = 10_000;
const MAX_WALK_ENTRIES = 50_000;
const MAX_WALK_RESPONSE_BYTES = 4 * 1024 * 1024;
const WALK_ITEM_OVERHEAD_BYTES = 64;

/**
 * `fs/walk`: breadth first from `root`, entries sorted by name (bytewise, as Rust sorts strings)
 * within each directory. Every listed entry counts against `maxEntries`; a directory deeper than
 * `maxDepth` is listed but not entered; directories are deduplicated by identity (their
 * canonical path when links are followed), so link cycles end.
 */
export async function walk(rootUrl: URL, options: FsWalkOptions, sb: FsSandbox | undefined): Promise<FsWalkResult> {
  if (options.maxDirectories === 0 || options.maxEntries === 0)
    throw RpcError.invalidRequest('filesystem walk limits must be greater than zero');
  if (options.maxDepth > MAX_WALK_DEPTH || options.maxDirectories > MAX_WALK_DIRECTORIES || options.maxEntries > MAX_WALK_ENTRIES) {
    throw RpcError.invalidRequest(
      `filesystem walk limits exceed maximums: depth=${MAX_WALK_DEPTH}, directories=${MAX_WALK_DIRECTORIES}, entries=${MAX_WALK_ENTRIES}`,
    );
  }
  const rootPath = localPath(rootUrl);
  const follow = options.followDirectorySymlinks;
  const outcome: FsWalkResult = { entries: [], errors: [], truncated: false };
  if (sb) await io(async () => sb.checkRead(await resolveFor(sb, rootPath, true)));
  const root = await io(() => metadataFollowing(rootPath));
  if (!root.isDirectory || (root.isSymlink && !follow)) return outcome;
  const rootIdentity = follow ? await io(() => fsp.realpath(rootPath)) : rootPath;

  let responseBytes = 0;
  const reserve = (bytes: number): boolean => {
    const total = responseBytes + bytes + WALK_ITEM_OVERHEAD_BYTES;
    if (total > MAX_WALK_RESPONSE_BYTES) {
      outcome.truncated = true;
      return false;
    }
    responseBytes = total;
    return true;
  };
  const pushError = (path: string, e: unknown): boolean => {
    const uri = uriFromPath(path);
    const message = describeIoError(e);
    if (!reserve(Buffer.byteLength(uri) + Buffer.byteLength(message))) return false;
    outcome.errors.push({ path: uri, message });
    return true;
  };

  const queue: Array<{ path: string; depth: number }> = [{ path: rootPath, depth: 0 }];
  const visited = new Set<string>([rootIdentity]);
  let directoryCount = 1;
  let entryCount = 0;
  for (let next = queue.shift(); next; next = queue.shift()) {
    let listing: FsDirectoryEntry[];
    try {
      listing = sb ? await listDirectoryChecked(sb, await fsp.realpath(next.path)) : await listDirectory(next.path);
    } catch (e) {
      if (!pushError(next.path, e)) return outcome;
      continue;
    }
    listing.sort((a, b) => Buffer.compare(Buffer.from(a.fileName), Buffer.from(b.fileName)));
    // Metadata is fetched ahead in parallel batches (only for entries the limit still allows);
    // the entries are still handled in order.
    const allowed = listing.slice(0, options.maxEntries - entryCount);
    const metas = await metadataOfAll(allowed.map((item) => join(next.path, item.fileName)));
    for (const [k, item] of listing.entries()) {
      if (entryCount === options.maxEntries) {
        outcome.truncated = true;
        return outcome;
      }
      entryCount++;
      const path = join(next.path, item.fileName);
      const meta = metas[k]!;
      if (!meta.ok) {
        if (!pushError(path, meta.error)) return outcome;
        continue;
      }
      const { isDirectory, isFile, isSymlink } = meta.value;
      if (isSymlink && (!follow || !isDirectory)) continue;
      const kind: FsWalkEntry['kind'] | undefined = isDirectory ? 'directory' : isFile ? 'file' : undefined;
      if (!kind) continue;
      const uri = uriFromPath(path);
      if (!reserve(Buffer.byteLength(uri))) return outcome;
      outcome.entries.push({ path: uri, kind });
      if (kind !== 'directory' || next.depth >= options.maxDepth) continue;
      if (options.pruneHiddenDirectories && item.fileName.startsWith('.')) continue;
      let identity = path;
      if (follow) {
        try {
          identity = await fsp.realpath(path);
        } catch (e) {
          if (!pushError(path, e)) return outcome;
          continue;
        }
      }
      if (visited.has(identity)) continue;
      visited.add(identity);
      if (directoryCount === options.maxDirectories) {
        outcome.truncated = true;
      } else {
        directoryCount++;
        queue.push({ path, depth: next.depth + 1 });
      }
    }
  }
  return outcome;
}
