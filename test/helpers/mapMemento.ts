import type { MementoLike } from '../../src/core/sessionMemory';

/** A Memento stand-in: a Map whose values are JSON-cloned both ways, as VS Code stores them; counts writes. */
export class MapMemento implements MementoLike {
  readonly values = new Map<string, unknown>();
  writes = 0;
  get<T>(key: string): T | undefined {
    const v = this.values.get(key);
    return v === undefined ? undefined : (JSON.parse(JSON.stringify(v)) as T);
  }
  update(key: string, value: unknown): Promise<void> {
    this.writes++;
    this.values.set(key, JSON.parse(JSON.stringify(value)));
    return Promise.resolve();
  }
}
