import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProcessStartParams } from '../../../src/protocol';

const start = (env: unknown, extra: Record<string, unknown> = {}) =>
  ProcessStartParams.safeParse({ processId: 'p', argv: ['env'], cwd: 'file:///tmp', env, tty: false, ...extra });

test('process/start env keeps a variable named __proto__ (z.record would drop it), as an ordinary key', () => {
  const raw = JSON.parse(
    '{"processId":"p","argv":["env"],"cwd":"file:///tmp","env":{"__proto__":"x","A":"1"},"tty":false,"envPolicy":{"inherit":"none","ignoreDefaultExcludes":false,"exclude":[],"set":{"__proto__":"s"},"includeOnly":[]}}',
  );
  const p = ProcessStartParams.parse(raw);
  assert.deepEqual(Object.entries(p.env), [
    ['__proto__', 'x'],
    ['A', '1'],
  ]);
  assert.equal(Object.getPrototypeOf(p.env), null, 'no prototype to pollute');
  assert.deepEqual(Object.entries(p.envPolicy!.set), [['__proto__', 's']]);
});

test('process/start env: still an object of strings, with the failing name in the issue path', () => {
  for (const bad of [null, 'A=1', ['A=1'], 3]) assert.equal(start(bad).success, false, JSON.stringify(bad));
  const r = start({ A: '1', B: 2 });
  assert.equal(r.success, false);
  assert.deepEqual(
    r.error!.issues.map((i) => [i.path.join('.'), i.message]),
    [['env.B', 'Invalid input: expected string, received number']],
  );
  assert.equal(start({}).success, true);
});
