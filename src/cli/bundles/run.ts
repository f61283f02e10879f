// dist/cli/run.js (src/cli/commands.ts).
import type { BundleExports } from '../commands';
import { runCommand } from '../run';

export const commands: BundleExports['commands'] = { run: runCommand };
