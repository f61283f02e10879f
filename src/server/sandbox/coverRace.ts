import { lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { COVER_NAME } from '../../util';

/*
 * A sandbox covers every other live server's private directory with that directory's own cover
 * (`--ro-bind-try <dir>/.exec-bridge-cover <dir>`, ./bwrapArgs.ts). bwrap skips a cover that is
 * gone when it looks, but a directory removed between its look and its mount (a test's or a
 * user's custom EXEC_BRIDGE_RUNTIME_DIR, removed with its server) fails the whole start before the
 * command runs: "bwrap: Can't bind mount …/.exec-bridge-cover on …: No such file or directory".
 * Nothing of the command has run then, so the start is run again with the covers read afresh.
 *
 * `CoverRaceWatch` holds back what could be that message (the first stderr bytes, before any
 * stdout byte, while they are one line starting "bwrap: "; bwrap writes it in three writes) and the
 * stdin written meanwhile, and says at the end whether the start failed that way. Anything else
 * releases the held bytes at once, in order. A command cannot get itself run twice by printing
 * such a line: the retry also needs the cover it names to be gone now, and a sandboxed command
 * cannot reach a covered directory.
 *
 * The same holds for another process's directory that the sandbox hides under a tmpfs (an older
 * version's temp directory, a runtime directory registered without a cover): removed between
 * bwrap's look and its mount, it fails the start with "bwrap: Can't remount readonly on /newroot<dir>
 * …: No such file or directory" (CI c22). The retry needs that directory to be gone now, or to be
 * another directory than the one planned: any bwrap building a sandbox with the old plan makes its
 * mount point again on the host where the sandbox's view of the parent is writable (e.g. under /tmp),
 * so another start of this server, or another server, can have made it again already (stop 35's CI).
 * A sandboxed command cannot do either: it sees a tmpfs there, and the folders above are pinned.
 */

/** A transient directory as the planner saw it: where, and which directory it was. */
export interface TransientDir {
  dir: string;
  id: string;
}

/** Which directory `st` is: a directory removed and made again is another one (another inode or birth time). */
export function dirIdentity(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.birthtimeMs}`;
}

/**
 * The planner's view of other processes' directories (HiddenDirs.transient): which directory each
 * one is when a start is planned, so that one gone or made again under bwrap lets it run again.
 */
export class TransientDirs {
  private readonly seen = new Map<string, string | undefined>();

  constructor(dirs: readonly string[] = []) {
    for (const d of dirs) this.seen.set(d, undefined);
  }

  has(p: string): boolean {
    return this.seen.has(p);
  }

  /** Whether `p` (one of them) is a directory now; if so, which one is kept. */
  present(p: string): boolean {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st?.isDirectory()) return false;
    this.seen.set(p, dirIdentity(st));
    return true;
  }

  /** Those of them among `hidden` (each found present), as planned. */
  among(hidden: readonly string[]): TransientDir[] {
    return hidden.flatMap((dir) => {
      const id = this.seen.get(dir);
      return id === undefined ? [] : [{ dir, id }];
    });
  }
}

/** A start that meets the race this many times in a row reports the last failure as it is. */
export const MAX_COVER_RETRIES = 3;
/** bwrap's message is one line; more than this is the command's. */
const MAX_HELD_BYTES = 4096;
/** Stdin written while watching is kept for a retry up to this; past it, no retry (the failure is reported). */
const MAX_STDIN_BYTES = 1024 * 1024;
const PREFIX = 'bwrap: ';

export type Push = (stream: 'stdout' | 'stderr', data: Buffer) => void;

export class CoverRaceWatch {
  private held: Buffer[] = [];
  private heldText = '';
  private watching = true;
  private stdin: Buffer[] = [];
  private stdinBytes = 0;
  private stdinKept = true;

  private readonly dirs: readonly string[];

  /**
   * `covers`: the other servers' private directories this start's sandbox covers;
   * `transient`: other processes' directories it hides under a tmpfs, as planned.
   */
  constructor(
    private readonly covers: readonly string[],
    private readonly transient: readonly TransientDir[] = [],
  ) {
    this.dirs = [...covers, ...transient.map((t) => t.dir)];
  }

  /** Output as it comes from the child: passed on through `push`, or held. */
  feed(stream: 'stdout' | 'stderr', data: Buffer, push: Push): void {
    if (!this.watching) return push(stream, data); // the common case, once the first output has gone by: nothing to do
    if (stream === 'stderr' && this.mayBeBwrapLine(data)) {
      this.held.push(Buffer.from(data)); // a copy: the stream may reuse its read buffer
      return;
    }
    this.release(push);
    push(stream, data);
  }

  /** Stdin written to this attempt (kept for the next one, within bounds). */
  wroteStdin(data: Buffer): void {
    if (!this.watching || !this.stdinKept || data.length === 0) return;
    this.stdinBytes += data.length;
    if (this.stdinBytes > MAX_STDIN_BYTES) {
      this.stdinKept = false;
      this.stdin = [];
    } else {
      this.stdin.push(Buffer.from(data));
    }
  }

  /** Ends the watch: held bytes go out now, in order. */
  release(push: Push): void {
    this.watching = false;
    const held = this.held;
    this.held = [];
    this.stdin = [];
    for (const d of held) push('stderr', d);
  }

  /** Bytes are held (the attempt's end decides whether they are shown). */
  get holding(): boolean {
    return this.held.length > 0;
  }

  /**
   * At the attempt's end (exited with `exitCode`, both streams closed): the covered directory whose
   * cover vanished under bwrap (or the transient directory gone or made again), if that is why it failed and the start can be run again with the
   * stdin written so far (`stdin`).
   */
  raced(exitCode: number): { dir: string; stdin: Buffer[] } | undefined {
    if (!this.holding || exitCode !== 1 || !this.stdinKept || !this.heldText.endsWith('\n')) return undefined;
    const gone = (p: string) => !lstatSync(p, { throwIfNoEntry: false });
    const replaced = ({ dir, id }: TransientDir) => {
      const st = lstatSync(dir, { throwIfNoEntry: false });
      return !st || dirIdentity(st) !== id;
    };
    const dir =
      this.covers.find((d) => names(this.heldText, d) && gone(join(d, COVER_NAME))) ??
      this.transient.find((t) => names(this.heldText, t.dir) && replaced(t))?.dir;
    return dir === undefined ? undefined : { dir, stdin: this.stdin };
  }

  private mayBeBwrapLine(data: Buffer): boolean {
    const text = this.heldText + data.toString('utf8');
    if (text.length > MAX_HELD_BYTES) return false;
    const nl = text.indexOf('\n');
    if (nl !== -1 && nl !== text.length - 1) return false;
    const ok = text.startsWith(PREFIX) ? nl === -1 || this.dirs.some((d) => names(text, d)) : PREFIX.startsWith(text);
    if (ok) this.heldText = text;
    return ok;
  }
}

/** Whether `line` names `dir` as a whole path (bwrap prints it bare or under /oldroot, /newroot). */
function names(line: string, dir: string): boolean {
  for (let i = line.indexOf(dir); i !== -1; i = line.indexOf(dir, i + 1)) {
    const after = line[i + dir.length];
    if (after === undefined || after === '/' || after === ':' || after === ' ' || after === '\n') return true;
  }
  return false;
}
