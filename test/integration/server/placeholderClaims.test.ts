/**
 * Placeholder claims (src/server/sandbox/placeholders.ts) on a real file system, with the real
 * orphan watchdog they register with: a stub we make holds our claim while a sandbox relies on it
 * and goes with its marker after; a folder of the user's (content beside any claims) never gets a
 * claim of ours, so the user's own `rm -rf` of it is never refused for our sake ("Directory not
 * empty": the VS Code suite `stubs` hit it when a sandbox for the next start was built from a plan
 * made while `.vscode` was still a stub).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PlaceholderClaims, STUB_MARKER_SUFFIX } from '../../../src/server/sandbox/placeholders';

const claims = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.exec-bridge-claim-'));

test('a stub we make holds our claim while it is used, and goes with its marker after', () => {
  const ws = mkdtempSync(join(tmpdir(), 'exec-bridge-claims-'));
  try {
    const stub = join(ws, '.codex');
    const planner = new PlaceholderClaims();
    planner.retain(stub);
    assert.equal(claims(stub).length, 1, 'our claim is in the stub');
    assert.ok(existsSync(stub + STUB_MARKER_SUFFIX), 'the marker is beside it');
    planner.release(stub);
    assert.equal(existsSync(stub), false, 'the stub went with its last user');
    assert.equal(existsSync(stub + STUB_MARKER_SUFFIX), false, 'and its marker');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test("a folder of the user's gets no claim of ours, and the user's rm -rf of it works at once", () => {
  const ws = mkdtempSync(join(tmpdir(), 'exec-bridge-claims-'));
  try {
    const dotVscode = join(ws, '.vscode');
    mkdirSync(dotVscode);
    writeFileSync(join(dotVscode, 'tasks.json'), '{}\n');
    const planner = new PlaceholderClaims();
    planner.retain(dotVscode);
    assert.deepEqual(readdirSync(dotVscode), ['tasks.json'], 'nothing of ours went into the user’s folder');
    // What the user does, while a sandbox planned for the stub still waits (the retain above).
    rmSync(dotVscode, { recursive: true });
    assert.equal(existsSync(dotVscode), false);
    planner.release(dotVscode); // gone already: nothing to do, nothing thrown
    assert.equal(existsSync(dotVscode), false, 'the release made nothing again');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
