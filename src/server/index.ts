// The API of src/server, our exec-server, as src/cli starts it (docs/architecture.md, "Layers").
// Files of src/server import each other directly, never this index.

// The listener with its options and auth rules, and the CLI server's sandbox planner.
export { ExecServer, type ExecServerOptions, isLoopbackHost } from './execServer';
export { sandboxPlanner } from './sandboxSetup';

// What a server process does first: drop the descriptors it inherited that every child would get.
export { closeInheritedFds } from './inheritedFds';
