/**
 * An environment variable named `__proto__` reaches the process, on our server as on codex: the
 * JSON object's own key must survive parsing (zod's record drops it) and every copy of the env.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RawClient, startServer, type StartedServer } from '../../helpers/rawClient';

const KINDS = ['ours', 'codex'] as const;

describe('an env var named __proto__ reaches the process', () => {
  const servers = {} as Record<(typeof KINDS)[number], StartedServer>;
  before(async () => {
    await Promise.all(KINDS.map(async (k) => (servers[k] = await startServer(k))));
  });
  after(async () => {
    await Promise.all(KINDS.map((k) => servers[k]?.stop()));
  });

  for (const kind of KINDS) {
    test(`${kind}: env {"__proto__": "x"} with and without an envPolicy`, async () => {
      const { client } = await RawClient.session(servers[kind].url);
      try {
        const run = async (id: string, params: string) => {
          // Raw JSON on purpose: an object literal's __proto__ would set the prototype, not a key.
          const raw = `{"processId":"${id}","argv":["/usr/bin/env"],"cwd":"file:///tmp","tty":false,"arg0":null,${params}}`;
          const answer = await client.call('process/start', JSON.parse(raw));
          assert.equal(answer.error, undefined, JSON.stringify(answer.error));
          await client.processEvents(id);
          return client.output(id).split('\n').filter(Boolean).sort();
        };
        assert.deepEqual(await run('exact', '"env":{"__proto__":"x","A":"1"}'), ['A=1', '__proto__=x']);
        const policy =
          '"envPolicy":{"inherit":"none","ignoreDefaultExcludes":false,"exclude":[],"includeOnly":[],"set":{"__proto__":"from-set","B":"2"}}';
        assert.deepEqual(await run('set', `"env":{},${policy}`), ['B=2', '__proto__=from-set']);
        assert.deepEqual(await run('wins', `"env":{"__proto__":"from-env"},${policy}`), ['B=2', '__proto__=from-env']);
        // A PTY start too (node-pty copies the env by assignment).
        const tty = JSON.parse(
          `{"processId":"tty","argv":["/usr/bin/env"],"cwd":"file:///tmp","tty":true,"arg0":null,"env":{"__proto__":"in-pty","A":"1"}}`,
        );
        const answer = await client.call('process/start', tty);
        assert.equal(answer.error, undefined, JSON.stringify(answer.error));
        await client.processEvents('tty');
        const lines = client.output('tty').split(/\r?\n/);
        assert.ok(lines.includes('__proto__=in-pty'), lines.join(' | '));
        assert.ok(lines.includes('A=1'), lines.join(' | '));
      } finally {
        client.close();
      }
    });
  }
});
