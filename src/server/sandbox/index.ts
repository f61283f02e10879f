/*
 * The sandbox layer's public surface. Where things live: policy.ts (wire value → paths and modes),
 * layout.ts (→ mounts), bwrapArgs.ts / seatbelt.ts (→ launcher argv), seccomp.ts (filters),
 * planner.ts (SandboxPlanner: plans a start), placeholders.ts (stub claims for missing carve-outs),
 * carveOutGuard.ts (a running sandbox whose carve-outs change on the host is stopped),
 * nestedScan.ts (the nested .git/.vscode/.codex scan), bwrapProbe.ts (finding and probing bwrap),
 * prewarmStub.ts (what a pre-started sandbox runs), denial.ts (was a failure the sandbox?).
 */
export type { SpawnPlan, SpawnRequest } from '../spawnPlan';
export { explainProbeFailure, findBwrap, probeBwrap } from './bwrapProbe';
export { classifyExit, type DenialContext, type DenialVerdict } from './denial';
export { SandboxUnavailableError } from './errors';
export { planSpawn, SandboxPlanner, type SandboxedSpawnPlan, type SandboxOptions } from './planner';
export { SandboxUnsupportedError } from './policy';
export { PREWARM_STUB, stubScript } from './prewarmStub';
