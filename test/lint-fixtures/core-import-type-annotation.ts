// lint-as: src/core/fixture.ts
// A type written as import('…') is checked like an import (and style forbids the form anyway).
// expect: @typescript-eslint/consistent-type-imports: `import()` type annotations are forbidden.
// expect: layers/imports: src/core must not import src/vscode; it may import client, rpc, protocol, util (docs/architecture.md, "Layers")
export type Api = import('../vscode/api').ExecBridgeApi;
