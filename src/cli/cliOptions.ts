import { SandboxPolicyName } from '../protocol';

/* What the command lines of `run` and `mcp` share: their two errors, one walk over a table of options, value readers. */

/** A mistake on the command line: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}
/** `-h` or `--help`: the command prints its usage and exits 0. */
export class HelpRequested extends Error {}

/**
 * What one option does to the parse state. `value()` takes the option's value (`--flag=V`, else the
 * next argument; a UsageError when there is none); a switch never calls it.
 */
export type OptionHandler<S> = (state: S, value: () => string, flag: string) => void;

/** Options by name (`--cwd`, `-h`), each once. */
export type OptionTable<S> = Readonly<Record<string, OptionHandler<S>>>;

/**
 * Applies `args` to `state` in order, through `table`. With `operands`, `--` or the first argument
 * that does not start with `-` ends the options, and what follows (after a `--`) is returned;
 * without, every argument must be an option. `--flag=V` gives an option its value in one argument.
 */
export function applyOptions<S>(args: readonly string[], table: OptionTable<S>, state: S, operands: boolean): string[] {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (operands && a === '--') return args.slice(i + 1);
    if (operands && !a.startsWith('-')) return args.slice(i);
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const flag = eq > 0 ? a.slice(0, eq) : a;
    // Own names only: `constructor` or `__proto__` is no option.
    const handler = Object.hasOwn(table, flag) ? table[flag] : undefined;
    if (!handler) throw new UsageError(`unknown option ${a}`);
    const value = () => {
      const v = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    handler(state, value, flag);
  }
  return [];
}

/** A list option's value: comma-separated, trimmed, without empty items. */
export function listValue(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The handler of `-h` and `--help`. */
export const help: OptionHandler<unknown> = () => {
  throw new HelpRequested();
};

/** `--sandbox`'s value. */
export function sandboxPolicyValue(v: string): SandboxPolicyName {
  const policy = SandboxPolicyName.safeParse(v);
  if (!policy.success) throw new UsageError(`--sandbox must be read-only, workspace-write or full-access, got ${v}`);
  return policy.data;
}
