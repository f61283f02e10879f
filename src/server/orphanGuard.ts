import { spawn, type ChildProcess } from 'node:child_process';
import { SYSTEM_PATH } from './executables';

/*
 * Children die with the server, however it dies. A SIGKILLed Node process runs no cleanup, and
 * Linux's parent-death signal covers only a direct child (and Node cannot set it), so a small
 * watchdog does it: a `/bin/sh` in its own session that reads "+SID" / "-SID" lines on a pipe from
 * us. When that pipe closes — we exited, crashed or were SIGKILLed — it kills every session still
 * listed. Every child we spawn is a session leader (`detached: true`; node-pty does setsid), so
 * killing its session takes its whole tree, pipelines, background jobs and `nohup` children
 * included; only a descendant that made a session of its own escapes (as it escapes a terminal).
 * Sandboxed children need none of this (bwrap --die-with-parent ends their PID namespace); they
 * are listed anyway because it costs one write. A session whose leader we reaped ("r" line) is
 * killed only if no process has its number as pid: once one has, the kernel gave the number out
 * again, and the session of that number is someone else's (see processTree.ts `reapedGroupIsOurs`). Placeholder stubs ("S" / "s" lines: a claim file)
 * go with them: after the kills, each listed claim is removed and its stub directory `rmdir`ed; its
 * marker goes too unless the stub is another server's (claims alone in it), so a folder the user
 * made real in a stub is never left hidden.
 */
const SCRIPT = `trap '' HUP INT TERM QUIT PIPE
g=' '
o=' '
nl='
'
st=$nl
while IFS= read -r l; do
  case $l in
    +*) g="$g\${l#+} " ;;
    -*) s=\${l#-}; case $g in *" $s "*) g="\${g%% $s *} \${g#* $s }" ;; esac
      case $o in *" $s "*) o="\${o%% $s *} \${o#* $s }" ;; esac ;;
    r*) s=\${l#r}; case $g in *" $s "*) g="\${g%% $s *} \${g#* $s }"; o="$o$s " ;; esac ;;
    S*) st="$st\${l#S}$nl" ;;
    s*) x=\${l#s}; case $st in *"$nl$x$nl"*) st="\${st%%"$nl$x$nl"*}$nl\${st#*"$nl$x$nl"}" ;; esac ;;
  esac
done
set -f
set -- $g
for s in $o; do [ -d /proc/self ] && [ -e "/proc/$s" ] || set -- "$@" "$s"; done
if [ $# -gt 0 ]; then
  IFS=,
  command -v pkill >/dev/null 2>&1 && pkill -KILL -s "$*"
  for s do kill -s KILL -- "-$s" 2>/dev/null; done
fi
printf '%s' "$st" | while IFS= read -r f; do
  case $f in
    1/*) f=\${f#1}; rm -f -- "$f"; d=\${f%/*}; rmdir -- "$d" 2>/dev/null
      # The marker stays only beside a stub another server still claims (claims alone in it).
      keep=; if [ -d "$d" ]; then keep=1; set +f
        for e in "$d"/* "$d"/.[!.]* "$d"/..?*; do
          if [ -e "$e" ] || [ -L "$e" ]; then case \${e##*/} in .exec-bridge-claim-*) ;; *) keep= ;; esac; fi
        done; set -f; fi
      [ -n "$keep" ] || rm -f -- "$d.exec-bridge-stub" ;;
    0/*) rm -f -- "\${f#0}" ;;
  esac
done
exit 0
`;

export class OrphanGuard {
  private child: ChildProcess | undefined;
  private failed = false;

  /** Starts the watchdog (once, on first use). */
  private ensure(): ChildProcess | undefined {
    if (this.child || this.failed || process.platform === 'win32') return this.child;
    try {
      // Its pkill, rm and rmdir come from the system folders, never our PATH: a sandboxed command may
      // write a folder on it, and the watchdog runs unsandboxed (./executables.ts).
      const child = spawn('/bin/sh', ['-c', SCRIPT, 'exec-bridge-orphan-guard'], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        env: { PATH: SYSTEM_PATH },
      });
      child.on('error', () => {
        this.failed = true;
        this.child = undefined;
      });
      child.stdin!.on('error', () => undefined);
      // Neither the watchdog nor its pipe may keep the server alive.
      child.unref();
      (child.stdin as unknown as { unref?: () => void }).unref?.();
      this.child = child;
    } catch {
      this.failed = true;
    }
    return this.child;
  }

  /** The session `sid` (a child's pid) dies with us from now on. */
  add(sid: number): void {
    if (sid > 0) this.ensure()?.stdin?.write(`+${sid}\n`);
  }

  /**
   * The leader of session `sid` was reaped: what may be left of it (nohup children) still dies
   * with us, unless its number is some process's pid again by then (not ours any more).
   */
  leaderGone(sid: number): void {
    if (sid > 0 && this.child) this.child.stdin?.write(`r${sid}\n`);
  }

  /** The session `sid` was killed or reaped by us: forget it (its id may be reused). */
  remove(sid: number): void {
    if (sid > 0 && this.child) this.child.stdin?.write(`-${sid}\n`);
  }

  /**
   * A placeholder stub's claim file (sandbox/placeholders.ts): if we die, the watchdog removes it,
   * and with `removeDir` the stub directory too (`rmdir`: only while empty, so never anything real
   * nor a stub another server still claims).
   */
  addStub(claimFile: string, removeDir: boolean): void {
    if (!claimFile.includes('\n')) this.ensure()?.stdin?.write(`S${removeDir ? 1 : 0}${claimFile}\n`);
  }

  /** The claim was released by us (with the same `removeDir` it was added with). */
  removeStub(claimFile: string, removeDir: boolean): void {
    if (!claimFile.includes('\n') && this.child) this.child.stdin?.write(`s${removeDir ? 1 : 0}${claimFile}\n`);
  }

  /** The watchdog's pid (tests). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Clean shutdown: closing the pipe makes the watchdog kill what is left, then exit. */
  dispose(): void {
    this.child?.stdin?.end();
    this.child = undefined;
  }
}

/** One per server process: whatever owns a child registers it here. */
export const orphanGuard = new OrphanGuard();
