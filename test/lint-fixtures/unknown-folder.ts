// lint-as: src/newlayer/fixture.ts
// expect: layers/known-layer: src/newlayer/fixture.ts is not in a known layer (util, protocol, rpc, client, server, mcp, core, vscode, cli); add its folder to LAYERS in eslint.config.mjs and to docs/architecture.md, "Layers"
export const x = 1;
