import { BinaryResult } from '../protocol';
import type {
  EnvironmentInfo,
  EnvironmentStatusResult,
  FsDirectoryEntry,
  FsMetadata,
  ParamsOf,
  RequestMethod,
  ResultOf,
} from '../protocol';
import { fromUri, toUri } from './callHelpers';
import type { CallOptions } from './types';

/**
 * The file and environment requests of `ExecServerClient` (./execServerClient.ts) as typed
 * methods: plain paths in and out (file URIs on the wire), results unwrapped. Each is one `call`,
 * so it keeps the client's admission, recovery and in-flight rules.
 */
export abstract class TypedCalls {
  abstract call<M extends RequestMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<ResultOf<M>>;

  async readFile(path: string, options?: CallOptions): Promise<Buffer> {
    const r = await this.call('fs/readFile', { path: toUri(path) }, options);
    return r instanceof BinaryResult ? r.data : Buffer.from(r.dataBase64, 'base64');
  }
  async writeFile(path: string, data: Buffer | string, options?: CallOptions): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await this.call('fs/writeFile', { path: toUri(path), dataBase64: bytes.toString('base64') }, options);
  }
  async createDirectory(path: string, options?: CallOptions & { recursive?: boolean }): Promise<void> {
    await this.call('fs/createDirectory', { path: toUri(path), recursive: options?.recursive ?? true }, options);
  }
  getMetadata(path: string, options?: CallOptions): Promise<FsMetadata> {
    return this.call('fs/getMetadata', { path: toUri(path) }, options);
  }
  async readDirectory(path: string, options?: CallOptions): Promise<FsDirectoryEntry[]> {
    return (await this.call('fs/readDirectory', { path: toUri(path) }, options)).entries;
  }
  /** Resolves symlinks and `..`; returns a plain path. */
  async canonicalize(path: string, options?: CallOptions): Promise<string> {
    return fromUri((await this.call('fs/canonicalize', { path: toUri(path) }, options)).path);
  }
  async copy(source: string, destination: string, options?: CallOptions & { recursive?: boolean }): Promise<void> {
    await this.call(
      'fs/copy',
      { sourcePath: toUri(source), destinationPath: toUri(destination), recursive: options?.recursive ?? false },
      options,
    );
  }
  async remove(path: string, options?: CallOptions & { recursive?: boolean; force?: boolean }): Promise<void> {
    await this.call('fs/remove', { path: toUri(path), recursive: options?.recursive ?? true, force: options?.force ?? true }, options);
  }
  getEnvironmentInfo(options?: CallOptions): Promise<EnvironmentInfo> {
    return this.call('environment/info', {}, options);
  }
  getEnvironmentStatus(options?: CallOptions): Promise<EnvironmentStatusResult> {
    return this.call('environment/status', {}, options);
  }
}
