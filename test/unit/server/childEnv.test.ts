import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildChildEnv } from '../../../src/server/childEnv';

const base = { HOME: '/h', PATH: '/bin', LANG: 'C', SHELL: '/bin/sh', FOO: 'foo', API_KEY: 'k', GH_TOKEN: 't' };
/** The result has no prototype; compare its entries. */
const plain = (env: Record<string, string>) => ({ ...env });
const policy = (p: Partial<Parameters<typeof buildChildEnv>[1] & object>) => ({
  inherit: 'all' as const,
  ignoreDefaultExcludes: false,
  exclude: [],
  set: {},
  includeOnly: [],
  ...p,
});

test('without a policy, env is the whole environment', () => {
  assert.deepEqual(plain(buildChildEnv({ A: '1' }, null, base)), { A: '1' });
  assert.deepEqual(plain(buildChildEnv({}, undefined, base)), {});
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
  assert.deepEqual(plain(env), { HOME: '/override', PATH: '/bin', LANG: 'C', SHELL: '/bin/sh', X: 'env', Y: 'set' });
});

test('inherit none, exclude globs and includeOnly', () => {
  assert.deepEqual(plain(buildChildEnv({ A: '1' }, policy({ inherit: 'none', set: { B: '2' } }), base)), { B: '2', A: '1' });
  const env = buildChildEnv({}, policy({ exclude: ['F*'], includeOnly: ['*A*', 'F*'] }), base);
  // FOO is excluded; of the rest only names containing "a" (any case) are kept; API_KEY is a default exclude.
  assert.deepEqual(plain(env), { PATH: '/bin', LANG: 'C' });
});

test('a variable named __proto__ (or constructor, toString) is kept like any other, in env, set and the base', () => {
  // As JSON.parse makes it: an own property, not the prototype.
  const env = JSON.parse('{"__proto__":"from-env","constructor":"c","toString":"t"}') as Record<string, string>;
  const exact = buildChildEnv(env, null, base);
  assert.equal(Object.getPrototypeOf(exact), null);
  assert.deepEqual(Object.entries(exact), [
    ['__proto__', 'from-env'],
    ['constructor', 'c'],
    ['toString', 't'],
  ]);
  const set = JSON.parse('{"__proto__":"from-set"}') as Record<string, string>;
  assert.equal(buildChildEnv({}, policy({ inherit: 'none', set }), base)['__proto__'], 'from-set');
  assert.equal(buildChildEnv(env, policy({ inherit: 'none', set }), base)['__proto__'], 'from-env', 'env wins over set');
  const withProto = JSON.parse('{"__proto__":"from-base","PATH":"/bin"}') as NodeJS.ProcessEnv;
  assert.equal(buildChildEnv({}, policy({}), withProto)['__proto__'], 'from-base');
  assert.deepEqual(Object.keys(buildChildEnv({}, policy({ includeOnly: ['PATH'] }), withProto)), ['PATH']);
});
