// dist/cli/mcp.js (src/cli/commands.ts).
import type { BundleExports } from '../commands';
import { mcpCommand } from '../mcp';

export const commands: BundleExports['commands'] = { mcp: mcpCommand };
