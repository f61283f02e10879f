// dist/cli/mcpProxy.js (src/cli/commands.ts).
import type { BundleExports } from '../commands';
import { mcpProxyCommand } from '../mcpProxy';

export const commands: BundleExports['commands'] = { 'mcp-proxy': mcpProxyCommand };
