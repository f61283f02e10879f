// lint-as: src/mcp/fixture.ts
// expect: layers/imports: only src/vscode imports 'vscode' at runtime (docs/architecture.md, "Layers")
// expect: layers/imports: only src/vscode imports 'vscode' at runtime (docs/architecture.md, "Layers")
export const viaImport = () => import('vscode');
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const viaRequire = () => require('vscode') as unknown;
