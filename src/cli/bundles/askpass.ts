// dist/cli/askpass.js (src/cli/commands.ts).
import { askpassCommand } from '../askpass';
import type { BundleExports } from '../commands';

export const commands: BundleExports['commands'] = { askpass: askpassCommand };
