import type { OutputStream } from '../protocol';
import { RpcError } from '../rpc';
import { processLives } from '../util';
import { CarveOutGuard, type CarveOut } from './sandbox/carveOutGuard';
import { SandboxUnavailableError } from './sandbox/errors';
import { collectTree } from './processTree';
import type { SpawnPlan } from './spawnPlan';

/**
 * A running sandbox whose carve-outs the host changes is stopped (./sandbox/carveOutGuard.ts says
 * why): this ties the guard to one process. `stop` is called once, at the first change, before or
 * after the spawn; `settle` runs once the sandbox has ended and says what happened, in words for
 * the user (the process's last output, and `failure` in `process/read`).
 */
export class CarveOutStop {
  private readonly guard: CarveOutGuard;
  /** What the host took away while the process ran, once it ended (`failure` in `process/read`). */
  failure: string | null = null;
  /** The sandbox was sent SIGKILL for it (it may have ended by itself first: then its exit code is its own). */
  private killed = false;
  /** Its processes when it was killed. */
  private members: number[] = [];
  /** `ended` has resolved once: the exit waits no more (a pid reused meanwhile must not hold it for ever). */
  private waited = false;

  private constructor(
    carveOuts: CarveOut[],
    private readonly leader: () => number,
    private readonly terminate: () => void,
  ) {
    this.guard = new CarveOutGuard(carveOuts, () => this.stop());
  }

  /**
   * A guard for `plan`'s carve-outs, or undefined when it has none. `leader`: the sandbox's leader
   * while it runs unreaped, else 0; `terminate`: the process's own tree kill. A start that cannot
   * be guarded fails as a sandbox that cannot be built.
   */
  static arm(plan: SpawnPlan, leader: () => number, terminate: () => void): CarveOutStop | undefined {
    if (!plan.carveOuts?.length) return undefined;
    try {
      return new CarveOutStop(plan.carveOuts, leader, terminate);
    } catch (e) {
      if (!(e instanceof SandboxUnavailableError)) throw e;
      throw RpcError.internal(`sandbox unavailable: ${e.message}`, { kind: 'sandboxUnavailable', reason: e.reason });
    }
  }

  /** The process was just spawned: a change seen before that stops it now. */
  spawned(): void {
    if (this.guard.breached) this.stop();
  }

  /**
   * SIGKILL now, synchronously, to every process of the sandbox: each one runs no further than the
   * system call it is in. The tree kill that follows is batched to a later turn of the event loop,
   * and a command racing for the path would win meanwhile. Also when the process is stopped for
   * another reason (`destroy`): its stubs must not go while any of it runs.
   */
  stop(): void {
    const pid = this.leader();
    if (pid <= 0) return; // not spawned yet (`spawned` checks), or ended
    this.killed = true;
    this.members = collectTree(pid);
    for (const p of this.members) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    this.terminate();
  }

  /**
   * Resolves once every process of the sandbox we killed is gone (or a zombie, which runs nothing):
   * killed from outside, the leader can exit while the rest are still dying (measured: most of 45
   * were, 0.4–2 ms after the kill). Its PID 1 among them: once that is gone, the kernel has ended
   * every process of its namespace, those forked after our look at the tree included. Bounded (5 s).
   */
  async ended(): Promise<void> {
    const deadline = Date.now() + 5000;
    while (this.members.some(processLives) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    this.waited = true;
  }

  /** Whether the exit must wait for `ended` before `settle` (the sandbox was killed from outside). */
  get killedFromOutside(): boolean {
    return this.killed && !this.waited && this.members.some(processLives);
  }

  /**
   * Once the sandbox has ended: if a carve-out changed, what the command may have made on its way
   * is moved aside, and the words for the user go out as the process's last output (`push`). True
   * when a carve-out had changed. They are looked at once more first: a command that made the path
   * and exited at once usually ends before the watch's event is read (measured: every time). No new
   * breach is seen after `dispose` (our own stubs are released then; their going is none); one seen
   * before is still cleaned up.
   */
  settle(exitCode: number, tty: boolean, push: (stream: OutputStream, data: Buffer) => void): boolean {
    if (this.failure !== null) return false;
    this.guard.checkAll();
    const b = this.guard.breached;
    if (!b) return false;
    const moved = this.guard.quarantine();
    const what = b.found === 'missing' ? 'was removed or renamed' : b.found === 'replaced' ? 'was replaced' : 'could no longer be watched';
    const where = b.changed === b.path ? '' : ` (${b.changed} above it ${b.found === 'missing' ? 'went' : 'changed'})`;
    const lines = [
      `exec-bridge: ${this.killed && exitCode === 137 ? 'the sandbox was stopped: ' : ''}${b.path}${where} ${what} on this machine while the command ran, and the sandbox ` +
        `${b.hidden ? 'hid that path' : 'kept that path read-only'} only while it stayed; the command could have gone on to ${b.hidden ? 'read it' : 'write there'}.`,
    ];
    for (const [from, to] of moved)
      lines.push(
        to
          ? `exec-bridge: what was at ${from} may be the command's: it was moved to ${to}. Look at it before you use it or move it back.`
          : to === ''
            ? `exec-bridge: what was at ${from} may be the command's, and it could not be moved aside: it was removed.`
            : `exec-bridge: what is at ${from} may be the command's, and it could be neither moved aside nor removed: look at it before you use it.`,
      );
    this.failure = lines.join('\n');
    push(tty ? 'pty' : 'stderr', Buffer.from(tty ? `\r\n${lines.join('\r\n')}\r\n` : `\n${this.failure}\n`));
    return true;
  }

  dispose(): void {
    this.guard.dispose();
  }
}
