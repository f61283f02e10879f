/*
 * Which bundle holds each command (no imports: the dispatcher, main.ts, reads it before it loads
 * anything). esbuild.config.mjs builds each src/cli/bundles/<bundle>.ts into dist/cli/<bundle>.js;
 * dist/cli.js loads the one its command needs, so a start compiles only that command's code
 * (docs/architecture.md, "The command line"). serve, daemon and connect share one bundle: they are
 * the executor's side, the part an SSH host gets (EXECUTOR_FILES in src/client/daemonStart.ts).
 */
export const COMMAND_BUNDLES = {
  serve: 'server',
  daemon: 'server',
  connect: 'server',
  run: 'run',
  mcp: 'mcp',
  'mcp-proxy': 'mcpProxy',
  askpass: 'askpass',
} as const;

export type CommandName = keyof typeof COMMAND_BUNDLES;
export type BundleName = (typeof COMMAND_BUNDLES)[CommandName];

/** What a bundle exports: its commands (those COMMAND_BUNDLES maps to it). */
export type CommandMain = (args: string[]) => Promise<number>;
export type BundleExports = { commands: Partial<Record<CommandName, CommandMain>> };
