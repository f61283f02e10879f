import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Where a remote server's sign-in is kept: one JSON string per server (client registration,
 * tokens, discovery). VS Code: SecretStorage (src/vscode/mcpAuth.ts); tests and command lines:
 * memory or a 0600 file. Values are secrets: an implementation never logs them.
 */
export interface McpAuthStore {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

export class MemoryAuthStore implements McpAuthStore {
  readonly values = new Map<string, string>();
  get(key: string): Promise<string | undefined> {
    return Promise.resolve(this.values.get(key));
  }
  set(key: string, value: string): Promise<void> {
    this.values.set(key, value);
    return Promise.resolve();
  }
  delete(key: string): Promise<void> {
    this.values.delete(key);
    return Promise.resolve();
  }
}

/** A JSON file of key → value, readable only by its owner (written whole, through a rename). */
export class FileAuthStore implements McpAuthStore {
  private chain: Promise<unknown> = Promise.resolve();
  constructor(private readonly path: string) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.read())[key];
  }
  set(key: string, value: string): Promise<void> {
    return this.update((all) => {
      all[key] = value;
    });
  }
  delete(key: string): Promise<void> {
    return this.update((all) => {
      delete all[key];
    });
  }

  private async read(): Promise<Record<string, string>> {
    try {
      const v: unknown = JSON.parse(await readFile(this.path, 'utf8'));
      return typeof v === 'object' && v !== null ? (v as Record<string, string>) : {};
    } catch {
      return {};
    }
  }

  /** Serialized, so two saves in a row cannot lose one. */
  private update(change: (all: Record<string, string>) => void): Promise<void> {
    const next = this.chain.then(async () => {
      const all = await this.read();
      change(all);
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      const tmp = `${this.path}.${process.pid}.tmp`;
      await writeFile(tmp, JSON.stringify(all), { mode: 0o600 });
      await chmod(tmp, 0o600);
      await rename(tmp, this.path);
    });
    this.chain = next.catch(() => undefined);
    return next;
  }
}
