// dist/cli/server.js: the executor's side (src/cli/commands.ts).
import type { BundleExports } from '../commands';
import { connectCommand } from '../connect';
import { daemonCommand } from '../daemon';
import { serveCommand } from '../serve';

export const commands: BundleExports['commands'] = { serve: serveCommand, daemon: daemonCommand, connect: connectCommand };
