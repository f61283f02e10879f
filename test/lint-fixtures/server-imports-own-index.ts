// lint-as: src/server/sandbox/fixture.ts
// Inside a layer, files import each other directly: the index imports them, so importing it back is a cycle.
// expect: layers/imports: src/server/sandbox/fixture.ts imports its own layer's index: import the file itself (the index imports the layer's files, so this is a cycle) (docs/architecture.md, "Layers")
// expect: layers/imports: src/server/sandbox/fixture.ts imports its own layer's index: import the file itself (the index imports the layer's files, so this is a cycle) (docs/architecture.md, "Layers")
import { ExecServer } from '..';
import { sandboxPlanner } from '../index';
import { SandboxPlanner } from './planner';

export const parts = [ExecServer, sandboxPlanner, SandboxPlanner];
