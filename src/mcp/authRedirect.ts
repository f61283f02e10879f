import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The OAuth redirect target of a browser sign-in: an HTTP listener on 127.0.0.1 (RFC 8252 §7.3
 * loopback redirect) that takes one `?code=…&state=…` and answers the browser with a page saying
 * it may close the tab. The code is matched by `state`, not by path, so a proxy in front of it (VS
 * Code's `asExternalUri` port forwarding) may add a path prefix. Nothing it receives is logged.
 */
export class LoopbackRedirect {
  private server: Server | undefined;
  private waiter: { state: string; resolve(code: string): void; reject(e: Error): void } | undefined;
  readonly path = '/callback';

  private constructor(readonly port: number) {}

  /** Listens on `port` (0 = any free one); a busy fixed port falls back to a free one when `fallback`. */
  static async open(port: number, fallback: boolean): Promise<LoopbackRedirect> {
    try {
      return await LoopbackRedirect.listen(port);
    } catch (e) {
      if (!fallback || port === 0 || (e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
      return LoopbackRedirect.listen(0);
    }
  }

  private static async listen(port: number): Promise<LoopbackRedirect> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const r = new LoopbackRedirect((server.address() as AddressInfo).port);
    r.server = server;
    server.on('request', (req, res) => {
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      const w = r.waiter;
      if (!w || u.searchParams.get('state') !== w.state) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('No sign-in is waiting for this page.');
        return;
      }
      r.waiter = undefined;
      const code = u.searchParams.get('code');
      const error = u.searchParams.get('error');
      const ok = code !== null && error === null;
      res
        .writeHead(ok ? 200 : 400, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          `<!doctype html><title>Exec Bridge</title><p>${ok ? 'Signed in. You can close this tab and return to VS Code.' : 'The sign-in did not complete. You can close this tab.'}</p>`,
        );
      if (ok) w.resolve(code);
      else {
        const description = u.searchParams.get('error_description');
        w.reject(new Error(`the authorization server answered ${error ?? 'without a code'}${description ? `: ${description}` : ''}`));
      }
    });
    return r;
  }

  get url(): URL {
    return new URL(`http://127.0.0.1:${this.port}${this.path}`);
  }

  /** The code of the redirect carrying `state`; rejects on an error redirect, on `signal` or after `timeoutMs`. */
  waitForCode(state: string, signal: AbortSignal, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const timer = setTimeout(() => {
        this.waiter = undefined;
        done();
        reject(new Error(`the browser sign-in did not finish within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      const onAbort = () => {
        this.waiter = undefined;
        done();
        reject(signal.reason instanceof Error ? signal.reason : new Error('the sign-in was cancelled'));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort);
      this.waiter = {
        state,
        resolve: (c) => {
          done();
          resolve(c);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      };
    });
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}
