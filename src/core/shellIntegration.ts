import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { executorPath, type ExecServerClient, type StartProcessOptions } from '../client';

/**
 * VS Code's shell integration sequences (OSC 633): prompt start `A`, prompt end `B`, command
 * executed `C`, command finished `D[;exit]`, command line `E;<line>`, property `P;Cwd=<dir>`.
 * Our command terminals emit them around the one command; the executor shell emits them itself
 * from the bash/zsh scripts below.
 */
export type Osc633 =
  | { kind: 'A' }
  | { kind: 'B' }
  | { kind: 'C' }
  | { kind: 'D'; exitCode?: number }
  | { kind: 'E'; commandLine: string }
  | { kind: 'cwd'; path: string };

/** VS Code's escaping of a value: `\` → `\\`, `;` and every control character → `\xHH`. */
export function escapeOscValue(value: string): string {
  let out = '';
  for (const ch of value) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === ';' || c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out;
}

/** The inverse of `escapeOscValue` (`\\` and `\xNN`). */
export function unescapeOscValue(value: string): string {
  return value.replace(/\\(\\|x([0-9a-fA-F]{2}))/g, (_m, all: string, hex: string | undefined) =>
    hex !== undefined ? String.fromCharCode(parseInt(hex, 16)) : all,
  );
}

/** The working directory named by the last `P;Cwd=` mark in terminal text (escape codes included), if any. */
export function lastMarkedCwd(text: string): string | undefined {
  const at = text.lastIndexOf('\x1b]633;P;Cwd=');
  if (at < 0) return undefined;
  const start = at + '\x1b]633;P;Cwd='.length;
  const end = text.indexOf('\x07', start);
  if (end < 0) return undefined;
  const path = unescapeOscValue(text.slice(start, end));
  return path.startsWith('/') ? path : undefined;
}

export function encodeOsc633(s: Osc633): string {
  const body =
    s.kind === 'D'
      ? s.exitCode === undefined
        ? 'D'
        : `D;${s.exitCode}`
      : s.kind === 'E'
        ? `E;${escapeOscValue(s.commandLine)}`
        : s.kind === 'cwd'
          ? `P;Cwd=${escapeOscValue(s.path)}`
          : s.kind;
  return `\x1b]633;${body}\x07`;
}

/**
 * Marks for a command terminal (one command, no prompt): before the first text, the cwd, an empty
 * prompt, the command line and "executed"; before the text written once the run is finished
 * (the exit line), "finished" with the exit code.
 */
export class CommandMarks {
  private began = false;
  private ended = false;

  constructor(
    private readonly commandLine: string,
    private readonly cwd: string,
  ) {}

  wrap(text: string, finished: boolean, exitCode: number | undefined): string {
    let lead = '';
    if (!this.began) {
      this.began = true;
      lead += [{ kind: 'cwd', path: this.cwd }, { kind: 'A' }, { kind: 'B' }, { kind: 'E', commandLine: this.commandLine }, { kind: 'C' }]
        .map((s) => encodeOsc633(s as Osc633))
        .join('');
    }
    if (finished && !this.ended) {
      this.ended = true;
      lead += encodeOsc633({ kind: 'D', exitCode });
    }
    return lead + text;
  }
}

/** `bash` or `zsh` from a shell path; anything else gets no integration. */
export function shellKind(shellPath: string): 'bash' | 'zsh' | undefined {
  const base = posix.basename(shellPath);
  return base === 'bash' ? 'bash' : base === 'zsh' ? 'zsh' : undefined;
}

// The scripts print the sequences with printf so that they work in any locale; `__eb_esc` is
// escapeOscValue in shell. They load the user's own startup files first and change none of them.
const BASH_RC = String.raw`# Exec Bridge shell integration for bash (written by the extension; safe to delete).
if [ -r /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi
if [ -r "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi
if [ -z "$__eb_si_loaded" ]; then
__eb_si_loaded=1
__eb_esc() {
  local s="$1" out="" c i
  for (( i = 0; i < ${'$'}{#s}; i++ )); do
    c="${'$'}{s:i:1}"
    case "$c" in
      '\') out+='\\' ;;
      ';') out+='\x3b' ;;
      [[:cntrl:]]) printf -v c '\\x%02x' "'$c"; out+="$c" ;;
      *) out+="$c" ;;
    esac
  done
  printf '%s' "$out"
}
__eb_running=0
__eb_preexec() {
  [ "$__eb_running" = 1 ] && return
  case "$BASH_COMMAND" in __eb_*) return ;; esac
  [ -n "$COMP_LINE" ] && return
  __eb_running=1
  local line
  line="$(HISTTIMEFORMAT= builtin history 1 | sed 's/^ *[0-9]* *//')"
  printf '\033]633;E;%s\007\033]633;C\007' "$(__eb_esc "$line")"
}
__eb_precmd() {
  local status=$?
  if [ "$__eb_running" = 1 ]; then printf '\033]633;D;%s\007' "$status"; fi
  __eb_running=0
  printf '\033]633;P;Cwd=%s\007' "$(__eb_esc "$PWD")"
  if [ -n "$__eb_user_pc" ]; then eval "$__eb_user_pc"; fi
  case "$PS1" in *'633;A'*) ;; *) PS1='\[\033]633;A\007\]'"$PS1"'\[\033]633;B\007\]' ;; esac
  return $status
}
__eb_user_pc="$PROMPT_COMMAND"
PROMPT_COMMAND=__eb_precmd
trap '__eb_preexec' DEBUG
fi
`;

// zsh reads its startup files from $ZDOTDIR: we point it at ours, and ours read the user's from
// where zsh would have (the user's ZDOTDIR, passed on by the start wrapper, or $HOME), put ZDOTDIR
// back as it was, and touch no file there. The functions are defined before the user's .zshrc runs
// (its aliases do not apply to them) and run under `emulate -L zsh` (its options do not either);
// our precmd hook goes last (after a prompt theme's, which may set PS1 anew) — zsh hands every
// precmd hook the command's status — and our preexec first.
const ZSH_ENV = String.raw`# Exec Bridge shell integration for zsh (written by the extension; safe to delete).
__eb_zdotdir="$ZDOTDIR"
if [[ -n "$EXEC_BRIDGE_USER_ZDOTDIR" ]]; then ZDOTDIR="$EXEC_BRIDGE_USER_ZDOTDIR"; else unset ZDOTDIR; fi
unset EXEC_BRIDGE_USER_ZDOTDIR
if [[ -r "${'$'}{ZDOTDIR:-$HOME}/.zshenv" ]]; then . "${'$'}{ZDOTDIR:-$HOME}/.zshenv"; fi
if (( ${'$'}{+ZDOTDIR} )); then __eb_user_zdotdir="$ZDOTDIR"; fi
ZDOTDIR="$__eb_zdotdir"
unset __eb_zdotdir
`;

const ZSH_RC = String.raw`# Exec Bridge shell integration for zsh (written by the extension; safe to delete).
if [[ -z "$__eb_si_loaded" ]]; then
__eb_si_loaded=1
__eb_esc() {
  builtin emulate -L zsh
  local s="$1" out="" c i
  for (( i = 1; i <= ${'$'}{#s}; i++ )); do
    c="${'$'}{s[i]}"
    case "$c" in
      '\') out+='\\' ;;
      ';') out+='\x3b' ;;
      [[:cntrl:]]) out+="$(builtin printf '\\x%02x' "'$c")" ;;
      *) out+="$c" ;;
    esac
  done
  builtin print -rn -- "$out"
}
__eb_running=0
__eb_preexec() {
  builtin emulate -L zsh
  __eb_running=1
  builtin printf '\033]633;E;%s\007\033]633;C\007' "$(__eb_esc "$1")"
}
__eb_precmd() {
  local st=$?
  builtin emulate -L zsh
  if [[ "$__eb_running" = 1 ]]; then builtin printf '\033]633;D;%s\007' "$st"; fi
  __eb_running=0
  builtin printf '\033]633;P;Cwd=%s\007' "$(__eb_esc "$PWD")"
  case "$PS1" in *'633;A'*) ;; *) PS1=$'%{\e]633;A\a%}'"$PS1"$'%{\e]633;B\a%}' ;; esac
  return $st
}
fi
if (( ${'$'}{+__eb_user_zdotdir} )); then ZDOTDIR="$__eb_user_zdotdir"; else unset ZDOTDIR; fi
unset __eb_user_zdotdir
if [[ -r "${'$'}{ZDOTDIR:-$HOME}/.zshrc" ]]; then . "${'$'}{ZDOTDIR:-$HOME}/.zshrc"; fi
() {
  builtin emulate -L zsh
  precmd_functions=(${'$'}{precmd_functions:#__eb_precmd} __eb_precmd)
  preexec_functions=(__eb_preexec ${'$'}{preexec_functions:#__eb_preexec})
}
`;

/** The files a shell's integration needs, by name inside its directory. */
export function integrationFiles(kind: 'bash' | 'zsh'): Record<string, string> {
  return kind === 'bash' ? { bashrc: BASH_RC } : { '.zshenv': ZSH_ENV, '.zshrc': ZSH_RC };
}

/** The directory on the executor for one version of the scripts: under the user's cache, named by their hash. */
export function integrationDir(home: string, kind: 'bash' | 'zsh'): string {
  const files = integrationFiles(kind);
  const hash = createHash('sha256').update(JSON.stringify(files)).digest('hex').slice(0, 16);
  return posix.join(home, '.cache', 'exec-bridge', 'shell-integration', `${kind}-${hash}`);
}

/**
 * The start options of an interactive shell with integration: bash gets `--rcfile <ours>` (which
 * sources the user's ~/.bashrc first), zsh gets `ZDOTDIR=<ours>` (whose files source the user's).
 * The user's own ZDOTDIR is in the executor's environment, which only the executor sees: a zsh
 * without startup files (`-f`) passes it on as EXEC_BRIDGE_USER_ZDOTDIR, then becomes the shell.
 * Nothing in the user's home is changed.
 */
export function withShellIntegration(options: StartProcessOptions, dir: string, kind: 'bash' | 'zsh'): StartProcessOptions {
  const [shell] = options.argv;
  if (kind === 'bash') return { ...options, argv: [shell!, '--rcfile', posix.join(dir, 'bashrc'), '-i'] };
  const start = 'export EXEC_BRIDGE_USER_ZDOTDIR="${ZDOTDIR-}" ZDOTDIR="$1"; exec "$0" -i';
  return { ...options, argv: [shell!, '-f', '-c', start, shell!, dir] };
}

/**
 * Writes the scripts to the executor (fs/createDirectory + fs/writeFile; skipped when they are
 * there already) and returns the shell's start options with integration, or the options unchanged
 * for another shell, or when the executor has no home or refuses the write (`log` says why).
 */
export async function injectShellIntegration(
  client: Pick<ExecServerClient, 'environmentInfo' | 'createDirectory' | 'writeFile' | 'readFile'>,
  options: StartProcessOptions,
  log?: (line: string) => void,
): Promise<StartProcessOptions> {
  const kind = shellKind(options.argv[0] ?? '');
  if (!kind) return options;
  const home = executorPath(client.environmentInfo?.userHomeDir);
  if (!home) return options;
  const dir = integrationDir(home, kind);
  try {
    await client.createDirectory(dir, { recursive: true });
    for (const [name, text] of Object.entries(integrationFiles(kind))) {
      const path = posix.join(dir, name);
      const current = await client.readFile(path).catch(() => undefined);
      if (current?.toString('utf8') !== text) await client.writeFile(path, text);
    }
  } catch (e) {
    log?.(`shell integration skipped: could not write ${dir}: ${e instanceof Error ? e.message : String(e)}`);
    return options;
  }
  return withShellIntegration(options, dir, kind);
}
