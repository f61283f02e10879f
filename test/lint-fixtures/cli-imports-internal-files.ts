// lint-as: src/cli/fixture.ts
// Another layer's files are reached through its index only: a value, a type, a re-export, a dynamic
// import and a file of a layer's subfolder alike (cli-imports-indexes-ok.ts: the same through the indexes).
// expect: layers/imports: src/cli imports src/client/sshConnector.ts: import src/client through its index (src/client/index.ts is the layer's API) (docs/architecture.md, "Layers")
// expect: layers/imports: src/cli imports src/client/types.ts: import src/client through its index (src/client/index.ts is the layer's API) (docs/architecture.md, "Layers")
// expect: layers/imports: src/cli imports src/util/emitter.ts: import src/util through its index (src/util/index.ts is the layer's API) (docs/architecture.md, "Layers")
// expect: layers/imports: src/cli imports src/server/sandboxSetup.ts: import src/server through its index (src/server/index.ts is the layer's API) (docs/architecture.md, "Layers")
// expect: layers/imports: src/cli imports src/server/sandbox/planner.ts: import src/server through its index (src/server/index.ts is the layer's API) (docs/architecture.md, "Layers")
import { sshConnector } from '../client/sshConnector';
import type { ConnectionState } from '../client/types';
import type { SandboxPlanner } from '../server/sandbox/planner';

export { Emitter } from '../util/emitter';
export const planner = () => import('../server/sandboxSetup');
export type Planner = SandboxPlanner;
export const used: [typeof sshConnector, ConnectionState | undefined] = [sshConnector, undefined];
