// lint-as: src/server/sandbox/deep/fixture.ts
// A type import counts too, at any depth.
// expect: layers/imports: src/server must not import src/client; it may import rpc, protocol, util (docs/architecture.md, "Layers")
import type { ExecServerClient } from '../../../client';

export type C = ExecServerClient;
