// lint-as: src/vscode/fixture.ts
// src/vscode may import the package at runtime and every layer below it.
import { window } from 'vscode';
import { TerminalRun } from '../core/terminalRun';
import { McpServerManager } from '../mcp/serverManager';
import { ExecServerClient } from '../client';
import { Emitter } from '../util/emitter';

export const all = [window, TerminalRun, McpServerManager, ExecServerClient, Emitter];
