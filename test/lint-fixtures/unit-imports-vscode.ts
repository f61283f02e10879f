// lint-as: test/unit/core/fixture.test.ts
// expect: layers/imports: test/unit runs without VS Code: no import of 'vscode' (docs/architecture.md, "Layers")
// expect: layers/imports: test/unit runs without VS Code: no import of src/vscode (docs/architecture.md, "Layers")
import type { Uri } from 'vscode';
import { activate } from '../../../src/vscode/extension';

export const a: [typeof activate, Uri | undefined] = [activate, undefined];
