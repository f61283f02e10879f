import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backgroundInput, inputText, readInput, runInput, stopInput, writeInput } from '../../../src/core/agentToolInput';

test('the given fields of a run are read, the others stay absent', () => {
  assert.deepEqual(runInput({ command: 'npm test', executor: 'devbox', cwd: 'pkg', timeoutSeconds: 30 }), {
    command: 'npm test',
    executor: 'devbox',
    cwd: 'pkg',
    timeoutSeconds: 30,
  });
  const bare = runInput({ command: 'ls' });
  assert.deepEqual(bare, { command: 'ls' });
  assert.deepEqual(Object.keys(bare), ['command']);
  assert.deepEqual(backgroundInput({ command: 'npm run dev', waitSeconds: 5 }), { command: 'npm run dev', waitSeconds: 5 });
});

test('a field of the wrong type or a blank string counts as not given; a missing command is the empty one', () => {
  assert.deepEqual(runInput({ command: '   ', executor: 3, cwd: '', timeoutSeconds: '30' }), { command: '' });
  assert.deepEqual(runInput({}), { command: '' });
  assert.deepEqual(backgroundInput({ command: ['ls'], waitSeconds: Number.NaN }), { command: '' });
  assert.deepEqual(readInput({ id: 'bg-1', waitSeconds: Number.POSITIVE_INFINITY }), { id: 'bg-1' });
  assert.deepEqual(readInput({ waitSeconds: 0 }), { id: '', waitSeconds: 0 });
  assert.deepEqual(stopInput({ id: 7 }), { id: '' });
  assert.equal(inputText(' x '), ' x ', 'a given string is kept as it is');
  assert.equal(inputText('\t'), undefined);
});

test('a write sends its text as given, with a newline unless newline is false', () => {
  assert.deepEqual(writeInput({ id: 'bg-1', text: '  ' }), { id: 'bg-1', text: '  ' });
  assert.deepEqual(writeInput({ id: 'bg-1', text: 'y', newline: false }), { id: 'bg-1', text: 'y', newline: false });
  assert.deepEqual(writeInput({ id: 'bg-1', text: 'y', newline: 'no' }), { id: 'bg-1', text: 'y' });
  assert.deepEqual(writeInput({ id: 'bg-1', text: 42 }), { id: 'bg-1', text: '' });
});
