import { askpassCommand } from './askpass';
import { connectCommand, CONNECT_USAGE } from './connect';
import { daemonCommand, DAEMON_USAGE } from './daemon';
import { mcpCommand, MCP_USAGE } from './mcp';
import { mcpProxyCommand } from './mcpProxy';
import { runCommand, RUN_USAGE } from './run';
import { serveCommand, SERVE_USAGE } from './serve';

const USAGE = `exec-bridge — run commands on an executor through an exec-server

${SERVE_USAGE}

${RUN_USAGE}

${CONNECT_USAGE}

${DAEMON_USAGE}

${MCP_USAGE}
`;

const commands: Record<string, (args: string[]) => Promise<number>> = {
  serve: serveCommand,
  run: runCommand,
  connect: connectCommand,
  daemon: daemonCommand,
  mcp: mcpCommand,
  'mcp-proxy': mcpProxyCommand,
  askpass: askpassCommand,
};

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '-h' || cmd === '--help' || cmd === 'help') {
    process.stdout.write(USAGE);
    return cmd === undefined ? 2 : 0;
  }
  const run = commands[cmd];
  if (!run) {
    process.stderr.write(`exec-bridge: unknown command ${cmd}\n\n${USAGE}`);
    return 2;
  }
  return run(rest);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`exec-bridge: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
