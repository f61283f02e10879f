import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isStandIn, STAND_IN_WINDOW_MS } from '../../../src/core/standInTerminal';

const shell = { custom: false, named: false, sinceActivation: 1_400 };

test("VS Code's default shell at startup, in a window whose last one had no local terminal, is the stand-in", () => {
  assert.equal(isStandIn(shell, false, false), true);
  assert.equal(isStandIn({ ...shell, sinceActivation: 0 }, false, false), true, 'already open at activation');
});

test('nothing else is: a local terminal last time, not known, a second one, ours, a named one, a late one', () => {
  assert.equal(isStandIn(shell, true, false), false, 'VS Code revives that one: a new shell is the user’s');
  assert.equal(isStandIn(shell, undefined, false), false, 'first activation in this workspace: not known');
  assert.equal(isStandIn(shell, false, true), false, 'VS Code opens one; another is the user’s');
  assert.equal(isStandIn({ ...shell, custom: true }, false, false), false);
  assert.equal(isStandIn({ ...shell, named: true }, false, false), false);
  assert.equal(isStandIn({ ...shell, sinceActivation: STAND_IN_WINDOW_MS }, false, false), false);
});
