// lint-as: src/vscode/fixture.ts
// A layer's subfolder with an index of its own (src/mcp/config) is still inside the layer: src/mcp/index.ts is its API.
// expect: layers/imports: src/vscode imports src/mcp/config/index.ts: import src/mcp through its index (src/mcp/index.ts is the layer's API) (docs/architecture.md, "Layers")
import { parseMcpJson } from '../mcp/config';

export const parse = parseMcpJson;
