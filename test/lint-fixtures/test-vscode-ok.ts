// lint-as: test/vscode/suite/fixture.test.ts
// The real-VS-Code tests may import both.
import { commands } from 'vscode';
import { activate } from '../../../src/vscode/extension';

export const both = [commands, activate];
