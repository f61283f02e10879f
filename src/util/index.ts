// The API of src/util: what the other layers import from it (docs/architecture.md, "Layers").
// Files of src/util import each other directly, never this index.

// Events, resources and promises without `vscode`.
export { type Disposable, DisposableStore } from './disposable';
export { Emitter, type Event } from './emitter';
export { Deferred } from './deferred';

// Injected time and retry delays.
export { type Clock, systemClock, type TimerHandle } from './clock';
export { backoffDelay } from './backoff';
export { formatDuration } from './duration';

// Words for errors and exit codes.
export { errorMessage } from './errorMessage';
export { describeExitCode } from './exitCode';

// Text: lines of a stream, the tail of a growing text, shell quoting.
export { LineSplitter } from './lineSplitter';
export { TextTail } from './textTail';
export { shellLine, shellWord } from './shellQuote';

// The per-user private directory (hidden from every sandbox) and its unix sockets.
export {
  COVER_NAME,
  type HiddenDirs,
  makePrivateSubdir,
  pidAlive,
  privateDir,
  privateDirCandidates,
  processLives,
  sandboxHiddenDirs,
  sweepDeadDirs,
  TOKEN_DIR_PREFIX,
} from './privateDir';
export { socketAccepts } from './unixSocket';
