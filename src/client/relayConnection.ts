import { StdioTransport } from '../rpc';
import type { Disposable } from '../util';
import type { Connection } from './types';

/**
 * A stdio connection to our relay (`exec-bridge connect`): JSON lines, plus the relay's own
 * keepalive (`{"ebRelayPing":N}` → `{"ebRelayPong":N}`, answered by the relay, never forwarded),
 * so the client notices a dead path (and the relay knows its client is alive).
 */
export class RelayConnection extends StdioTransport implements Connection {
  private pongs = new Set<() => void>();
  private n = 0;

  ping(): void {
    this.send(`{"ebRelayPing":${++this.n}}`);
  }

  onPong(listener: () => void): Disposable {
    this.pongs.add(listener);
    return { dispose: () => void this.pongs.delete(listener) };
  }

  protected override emitMessage(text: string): void {
    if (text.length < 64 && text.startsWith('{"ebRelayPong":')) {
      for (const l of [...this.pongs]) l();
      return;
    }
    super.emitMessage(text);
  }
}
