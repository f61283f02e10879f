// lint-as: src/core/fixture.ts
// Type-only imports of the package are allowed outside src/vscode (the old `**/vscode` pattern refused them).
import type { Uri } from 'vscode';
import { type Range } from 'vscode';

export type Where = Uri | Range;
