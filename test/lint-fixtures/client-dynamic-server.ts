// lint-as: src/client/fixture.ts
// expect: layers/imports: src/client must not import src/server; it may import rpc, protocol, util (docs/architecture.md, "Layers")
// expect: layers/imports: src/client must not import src/server; it may import rpc, protocol, util (docs/architecture.md, "Layers")
// expect: layers/imports: src/client must not import src/mcp; it may import rpc, protocol, util (docs/architecture.md, "Layers")
export const viaImport = () => import('../server/execServer');
export const viaTemplate = () => import(`../server/session`);
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const viaRequire = () => require('../mcp/config') as unknown;
