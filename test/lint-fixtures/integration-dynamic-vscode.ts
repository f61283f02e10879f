// lint-as: test/integration/fixture.test.ts
// expect: layers/imports: test/integration runs without VS Code: no import of src/vscode (docs/architecture.md, "Layers")
// expect: layers/imports: test/integration runs without VS Code: no import of 'vscode' (docs/architecture.md, "Layers")
export const ext = () => import('../../src/vscode/extension');
export const api = () => import('vscode');
