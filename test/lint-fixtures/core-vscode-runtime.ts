// lint-as: src/core/fixture.ts
// expect: layers/imports: only src/vscode imports 'vscode' at runtime; use `import type` (docs/architecture.md, "Layers")
import { window } from 'vscode';

export const w = window;
