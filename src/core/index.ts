// The API of src/core, orchestration without UI, as src/vscode and src/cli use it (docs/architecture.md,
// "Layers"). Files of src/core import each other directly, never this index.

// Executors: the settings that define them, a connection to one (the bundled daemon among them), its state in words.
export {
  BUNDLED_EXECUTOR,
  defaultExecutorProblem,
  describeExecutor,
  type ExecutorConfig,
  outputSpoolFromSetting,
  type ParsedExecutors,
  redactUrl,
  sessionTtlMsFromSetting,
} from './executorConfig';
export { executorsFromScopes, unionOfListScopes, userList } from './settingScopes';
export { ExecutorConnection, type ExecutorState, type RestoredSession } from './executorConnection';
export { BundledServer } from './bundledServer';
export { authProblem } from './authProblem';
export { executorVersionLabel, stateText, statusBarText } from './executorStateText';
export { type RememberedProcess, SessionMemory } from './sessionMemory';

// The sandbox a run asks for, and the approval rules around a denial.
export {
  allowHostForWorkspace,
  DEFAULT_SANDBOX,
  readSandboxSettings,
  sandboxLabel,
  sandboxRequest,
  type SandboxSettings,
  withManagedNetwork,
} from './sandboxSettings';
export {
  APPROVAL_MODES,
  type ApprovalMode,
  type ApprovalOutcome,
  ApprovalPolicy,
  type BeforeRunAnswer,
  type BeforeRunOutcome,
  type DeniedRun,
  type PlannedRun,
  reportedDenial,
  sandboxUnavailableReason,
} from './approvalPolicy';
export { executorRun, type RunServices } from './executorRun';

// Terminal runs: what runs, its stream into the terminal, names, shell integration, reopening after a reload.
export type { TerminalRun } from './terminalRun';
export type { RunSpec, TerminalRunDeps } from './runSpec';
export type { Phase } from './terminalStreamModel';
export { TERMINAL_CREDIT_WINDOW } from './terminalFlow';
export { terminalName } from './terminalNames';
export { CommandMarks, injectShellIntegration, lastMarkedCwd } from './shellIntegration';
export { attachNewest, OPEN_FULL_OUTPUT_TITLE } from './terminalReplayRange';
export { REOPENED_REPLAY_SETTING, replayBytesFromSetting } from './reopenedReplaySetting';
export { copyFullOutput, type FullOutput, fullOutputNote } from './terminalFullOutput';
export { isStandIn } from './standInTerminal';
export { isActive, type RunRecord, RunRegistry } from './runRegistry';
export { EXEC_TASK_TYPE, parseTaskDefinition, resolveTask } from './taskDefinition';
export { EXECUTOR_FS_SCHEME, executorFileUri, findPathLinks, outputRewriter, type StreamReplacer } from './pathMapping';

// Files on an executor: the execbridge: file system, its changes, the workspace file, search.
export { ExecutorFiles, type FileStat } from './executorFiles';
export { classifyFsError, ExecutorFsError } from './fsErrors';
export { ExecutorChanges } from './executorChanges';
export type { FileChange } from './executorFilePoller';
export {
  executorFoldersInFile,
  executorWorkspaceFile,
  isExecutorWorkspaceFile,
  missingWorkspaceFolders,
  restrictedModeText,
  WORKSPACE_DIR_IN_FOLDER,
  workspaceFilePlacement,
} from './executorWorkspace';
export { clientProcesses, ExecutorSearch, fuzzyMatches } from './executorSearch';
export type { SearchScope, TextMatch, TextQuery } from './searchCommands';
export { matchPreview } from './matchPreview';

// The language-model tools (VS Code's and exec-bridge mcp's): their logic, input and bounded output.
export { AGENT_TOOL_NAMES, AgentTools, commandSketch, type OpenedRun } from './agentTools';
export { backgroundInput, inputText, readInput, runInput, stopInput, type ToolInput, writeInput } from './agentToolInput';
export { AGENT_OUTPUT_LIMIT, BoundedOutput, outputBound } from './agentOutput';
