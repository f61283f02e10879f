// lint-as: src/core/fixture.ts
// core and mcp are siblings: neither imports the other (src/vscode composes them).
// expect: layers/imports: src/core must not import src/mcp; it may import client, rpc, protocol, util (docs/architecture.md, "Layers")
import { McpServerManager } from '../mcp';

export const manager = McpServerManager;
