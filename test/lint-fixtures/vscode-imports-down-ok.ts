// lint-as: src/vscode/fixture.ts
// src/vscode may import the package at runtime and every layer below it.
import { window } from 'vscode';
import { RunRegistry } from '../core';
import { McpServerManager } from '../mcp';
import { ExecServerClient } from '../client';
import { Emitter } from '../util';

export const all = [window, RunRegistry, McpServerManager, ExecServerClient, Emitter];
