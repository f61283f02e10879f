import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildChildEnv } from '../../../src/server/envPolicy';

const base = { HOME: '/h', PATH: '/bin', LANG: 'C', SHELL: '/bin/sh', FOO: 'foo', API_KEY: 'k', GH_TOKEN: 't' };
const policy = (p: Partial<Parameters<typeof buildChildEnv>[1] & object>) => ({ inherit: 'all' as const, ignoreDefaultExcludes: false, exclude: [], set: {}, includeOnly: [], ...p });

test('without a policy, env is the whole environment', () => {
  assert.deepEqual(buildChildEnv({ A: '1' }, null, base), { A: '1' });
  assert.deepEqual(buildChildEnv({}, undefined, base), {});
});

test('inherit all drops secret-looking names unless told not to', () => {
  const env = buildChildEnv({}, policy({}), base);
  assert.equal(env.FOO, 'foo');
  assert.equal(env.API_KEY, undefined);
  assert.equal(env.GH_TOKEN, undefined);
  assert.equal(buildChildEnv({}, policy({ ignoreDefaultExcludes: true }), base).GH_TOKEN, 't');
});

test('inherit core keeps the core variables; set and env overlay, env wins', () => {
  const env = buildChildEnv({ X: 'env', HOME: '/override' }, policy({ inherit: 'core', set: { X: 'set', Y: 'set' } }), base);
  assert.deepEqual(env, { HOME: '/override', PATH: '/bin', LANG: 'C', SHELL: '/bin/sh', X: 'env', Y: 'set' });
});

test('inherit none, exclude globs and includeOnly', () => {
  assert.deepEqual(buildChildEnv({ A: '1' }, policy({ inherit: 'none', set: { B: '2' } }), base), { B: '2', A: '1' });
  const env = buildChildEnv({}, policy({ exclude: ['F*'], includeOnly: ['*A*', 'F*'] }), base);
  // FOO is excluded; of the rest only names containing "a" (any case) are kept; API_KEY is a default exclude.
  assert.deepEqual(env, { PATH: '/bin', LANG: 'C' });
});
