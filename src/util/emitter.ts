import type { Disposable } from './disposable';

export type Event<T> = (listener: (value: T) => void) => Disposable;

/** A minimal typed event emitter in the shape of VS Code's `EventEmitter`. */
export class Emitter<T> implements Disposable {
  private listeners = new Set<(value: T) => void>();

  readonly event: Event<T> = (listener) => {
    // Wrap so that the same function subscribed twice gets two independent subscriptions.
    const entry = (v: T) => listener(v);
    this.listeners.add(entry);
    return { dispose: () => void this.listeners.delete(entry) };
  };

  fire(value: T): void {
    for (const l of [...this.listeners]) {
      try {
        l(value);
      } catch (e) {
        // A broken listener must not starve the others; surface it asynchronously.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  dispose(): void {
    this.listeners.clear();
  }
}
