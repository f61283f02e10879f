import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorMessage } from '../../../src/util/errorMessage';

test('errorMessage: an Error gives its message, anything else its string form', () => {
  assert.equal(errorMessage(new TypeError('bad type')), 'bad type');
  assert.equal(errorMessage('plain text'), 'plain text');
  assert.equal(errorMessage(42), '42');
  assert.equal(errorMessage(null), 'null');
  assert.equal(errorMessage(undefined), 'undefined');
  // An error-like object from another realm or library keeps its message.
  assert.equal(errorMessage({ message: 'from elsewhere' }), 'from elsewhere');
  assert.equal(errorMessage({ message: 7 }), '[object Object]');
});
