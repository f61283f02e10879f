// lint-as: src/cli/fixture.ts
// `exec-bridge mcp` drives executors as the extension does: through core's connections.
import { ExecutorConnection } from '../core/executorConnection';
import { sandboxLabel } from '../core/sandboxSettings';

export const shared = [ExecutorConnection, sandboxLabel];
