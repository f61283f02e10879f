import { createConnection, createServer, type Server, type Socket } from 'node:net';

/*
 * Codex's prepared managed network (docs/sandbox.md): the proxy is the orchestrator's, on the host's
 * 127.0.0.1:PORT, and the sandbox may reach exactly those ports. The command's network namespace
 * has only its own loopback, so the in-sandbox bridge (./sandbox/netBridge.ts) listens on PORT there
 * and relays to a unix socket of ours; this end forwards each connection to the host's
 * 127.0.0.1:PORT, byte for byte. The policy is the orchestrator's proxy's: nothing is checked here.
 */
export class LoopbackRelay {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(readonly port: number) {
    this.server = createServer((inside) => {
      this.track(inside);
      inside.pause();
      const host = createConnection({ host: '127.0.0.1', port: this.port });
      this.track(host);
      host.once('connect', () => {
        inside.pipe(host);
        host.pipe(inside);
        inside.resume();
      });
      inside.on('close', () => host.destroy());
      host.on('close', () => inside.destroy());
    });
  }

  /** Listens on the unix socket `path`. */
  async listen(path: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(path, () => {
        this.server.removeListener('error', reject);
        resolve();
      });
    });
    this.server.unref();
  }

  close(): void {
    this.server.close();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  private track(s: Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => s.destroy());
  }
}
