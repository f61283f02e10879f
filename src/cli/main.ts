import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { COMMAND_BUNDLES, type BundleExports, type BundleName, type CommandName } from './commands';
import { CONNECT_USAGE, DAEMON_USAGE, MCP_USAGE, RUN_USAGE, SERVE_USAGE } from './usage';

/*
 * dist/cli.js: the dispatcher. It imports nothing heavy (the usage texts and the command table) and
 * loads only the bundle its command needs, dist/cli/<bundle>.js beside it (src/cli/commands.ts):
 * every start (`exec-bridge run --ssh` above all) compiles that command's code, not all of them.
 * process.argv[1] stays this file, the path commands hand to the processes they start.
 */

const USAGE = `exec-bridge — run commands on an executor through an exec-server

${SERVE_USAGE}

${RUN_USAGE}

${CONNECT_USAGE}

${DAEMON_USAGE}

${MCP_USAGE}
`;

/**
 * Each bundle by a literal path (esbuild.config.mjs leaves `./cli/*` to Node, beside dist/cli.js):
 * a Record, so that a bundle added to commands.ts without a loader here does not compile.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const LOADERS: Record<BundleName, () => BundleExports> = {
  server: () => require('./cli/server.js') as BundleExports,
  run: () => require('./cli/run.js') as BundleExports,
  mcp: () => require('./cli/mcp.js') as BundleExports,
  mcpProxy: () => require('./cli/mcpProxy.js') as BundleExports,
  askpass: () => require('./cli/askpass.js') as BundleExports,
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** The bundle of `cmd`, or a message saying that this installation does not have it. */
function load(cmd: CommandName): BundleExports | string {
  try {
    return LOADERS[COMMAND_BUNDLES[cmd]]();
  } catch (e) {
    const file = join(__dirname, 'cli', `${COMMAND_BUNDLES[cmd]}.js`);
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND' || existsSync(file)) throw e;
    // E.g. an SSH host's installation, which has the executor's side only (serve, daemon, connect).
    return `exec-bridge: the ${cmd} command is not part of this installation (${file} is missing)\n`;
  }
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '-h' || cmd === '--help' || cmd === 'help') {
    process.stdout.write(USAGE);
    return cmd === undefined ? 2 : 0;
  }
  if (!Object.hasOwn(COMMAND_BUNDLES, cmd)) {
    process.stderr.write(`exec-bridge: unknown command ${cmd}\n\n${USAGE}`);
    return 2;
  }
  const bundle = load(cmd as CommandName);
  if (typeof bundle === 'string') {
    process.stderr.write(bundle);
    return 1;
  }
  const run = bundle.commands[cmd as CommandName];
  if (!run) throw new Error(`dist/cli/${COMMAND_BUNDLES[cmd as CommandName]}.js has no ${cmd} command`);
  return run(rest);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`exec-bridge: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
