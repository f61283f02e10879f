// lint-as: src/cli/fixture.ts
// `exec-bridge mcp` drives executors as the extension does: through core's connections.
import { ExecutorConnection, sandboxLabel } from '../core';

export const shared = [ExecutorConnection, sandboxLabel];
