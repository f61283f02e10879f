// lint-as: src/cli/fixture.ts
// The imports of cli-imports-internal-files.ts, through each layer's index (with or without `/index`).
import { sshConnector, type ConnectionState } from '../client';

export { Emitter } from '../util/index';
export const planner = () => import('../server');
export const used: [typeof sshConnector, ConnectionState | undefined] = [sshConnector, undefined];
