import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authProblem } from '../../../src/core/authProblem';

const REFUSED = 'ws://127.0.0.1:9/ refused the WebSocket upgrade: HTTP 401 Unauthorized';

test('a 401 says whether a token is stored and what to do', () => {
  assert.equal(
    authProblem('devbox', REFUSED, false),
    'devbox needs a token (HTTP 401), and none is stored for it. "Set Token…" stores one in VS Code\'s secret storage.',
  );
  assert.equal(
    authProblem('devbox', REFUSED, true),
    'devbox refused the stored token (HTTP 401): it is wrong or expired. Set the right one with "Set Token…".',
  );
  assert.match(authProblem('devbox', REFUSED.replace('401 Unauthorized', '403 Forbidden'), true) ?? '', /HTTP 403/);
});

test('other failures are not token problems', () => {
  assert.equal(authProblem('devbox', 'connect ECONNREFUSED 127.0.0.1:9', false), undefined);
  assert.equal(authProblem('devbox', 'ws://h/ refused the WebSocket upgrade: HTTP 503 Service Unavailable', false), undefined);
});
