import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecutorState } from '../../../src/core/executorConnection';
import { executorVersionLabel, stateText, statusBarText } from '../../../src/core/executorStateText';

const recovering = (attempt: number): ExecutorState => ({
  kind: 'recovering',
  since: Date.UTC(2026, 0, 1, 12),
  attempt,
  cause: 'socket closed',
});

test('a recovery reads the same at every attempt: no ticking counter, no spinner, why in the detail', () => {
  const texts = [0, 1, 2, 37].map((n) => stateText(recovering(n), 'devbox'));
  for (const t of texts) assert.deepEqual(t, texts[0]);
  const since = new Date(Date.UTC(2026, 0, 1, 12)).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  assert.equal(texts[0]!.label, `offline since ${since}, retrying`);
  assert.doesNotMatch(texts[0]!.icon, /~spin/);
  assert.match(texts[0]!.detail ?? '', /socket closed.*Processes keep running on devbox/);
  assert.match(texts[0]!.detail ?? '', /for as long as devbox keeps them/);
});

test('a recovery with an end says until when the executor keeps the session', () => {
  const state: ExecutorState = { ...(recovering(1) as Extract<ExecutorState, { kind: 'recovering' }>), until: Date.UTC(2026, 0, 1, 22) };
  const end = new Date(Date.UTC(2026, 0, 1, 22)).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  assert.match(stateText(state, 'devbox').detail ?? '', new RegExp(`devbox keeps them, and Exec Bridge keeps retrying, until ${end}`));
});

test('the status bar names another executor that is reconnecting', () => {
  const connected: ExecutorState = { kind: 'connected', sessionId: 's' };
  assert.equal(statusBarText({ name: 'bundled', state: connected }, [{ name: 'devbox', state: { kind: 'idle' } }]), '$(vm-active) bundled');
  assert.equal(
    statusBarText({ name: 'bundled', state: connected }, [
      { name: 'devbox', state: recovering(3) },
      { name: 'gpu', state: recovering(1) },
    ]),
    '$(vm-active) bundled  $(sync) devbox, gpu reconnecting…',
  );
});

test('the executor version: ours names itself ("exec-bridge 0.1.0", no "v" before it); a bare number gets its "v"', () => {
  assert.equal(executorVersionLabel('exec-bridge 0.1.0'), 'exec-bridge 0.1.0');
  assert.equal(executorVersionLabel('0.171.0'), 'v0.171.0');
  assert.equal(executorVersionLabel('  '), undefined);
  assert.equal(executorVersionLabel(undefined), undefined);
});
