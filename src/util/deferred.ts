/** A promise with its resolve/reject exposed; `settled` tells whether either was called. */
export class Deferred<T> {
  readonly promise: Promise<T>;
  resolve!: (value: T) => void;
  reject!: (reason: unknown) => void;
  settled = false;

  constructor() {
    this.promise = new Promise<T>((res, rej) => {
      this.resolve = (v) => {
        if (!this.settled) {
          this.settled = true;
          res(v);
        }
      };
      this.reject = (e) => {
        if (!this.settled) {
          this.settled = true;
          rej(e);
        }
      };
    });
  }
}
