// lint-as: src/core/fixture.ts
// expect: layers/imports: src/core must not import src/vscode; it may import client, rpc, protocol, util (docs/architecture.md, "Layers")
// expect: layers/imports: src/core must not import src/vscode; it may import client, rpc, protocol, util (docs/architecture.md, "Layers")
import { activate } from '../vscode/extension';
import type { ExecBridgeApi } from '../vscode/api';

export const a: [typeof activate, ExecBridgeApi | undefined] = [activate, undefined];
