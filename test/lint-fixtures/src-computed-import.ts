// lint-as: src/mcp/fixture.ts
// expect: layers/imports: src/mcp: a computed import()/require() cannot be checked against the layers; use a string literal (docs/architecture.md, "Layers")
export const load = (name: string) => import(name);
