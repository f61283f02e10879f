import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecutorState } from '../../../src/core/executorConnection';
import { stateText, statusBarText } from '../../../src/core/executorStateText';

const recovering = (attempt: number): ExecutorState => ({
  kind: 'recovering',
  since: Date.UTC(2026, 0, 1, 12),
  attempt,
  cause: 'socket closed',
});

test('a recovery reads the same at every attempt: no ticking counter, no spinner, why in the detail', () => {
  const texts = [0, 1, 2, 37].map((n) => stateText(recovering(n)));
  for (const t of texts) assert.deepEqual(t, texts[0]);
  assert.equal(texts[0]!.label, 'reconnecting…');
  assert.doesNotMatch(texts[0]!.icon, /~spin/);
  assert.match(texts[0]!.detail ?? '', /socket closed.*running commands continue/);
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
