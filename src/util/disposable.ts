/** Something that holds a resource until disposed. Our own, so pure code needs no `vscode`. */
export interface Disposable {
  dispose(): void;
}

/** Owns a set of disposables; disposing the store disposes them all (last added first). */
export class DisposableStore implements Disposable {
  private items: Disposable[] = [];
  private disposed = false;

  add<T extends Disposable>(item: T): T {
    if (this.disposed) {
      item.dispose();
    } else {
      this.items.push(item);
    }
    return item;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const errors: unknown[] = [];
    for (const item of this.items.reverse()) {
      try {
        item.dispose();
      } catch (e) {
        errors.push(e);
      }
    }
    this.items = [];
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, 'several disposables failed');
  }
}
