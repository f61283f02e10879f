// lint-as: test/helpers/fixture.ts
// expect: layers/imports: test/helpers runs without VS Code: no import of 'vscode' (docs/architecture.md, "Layers")
import { window } from 'vscode';

export const w = window;
