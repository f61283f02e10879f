/**
 * A burst of `process/start` on one connection (issue 16 item 3): an early child's `closed` must
 * not wait until every later start has been spawned.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RawClient, startParams, startServer, type StartedServer } from '../../helpers/rawClient';

let server: StartedServer;
before(async () => {
  server = await startServer('ours');
});
after(() => server?.stop());

test('in a burst of 48 starts, the first process is closed before the last start is answered', async () => {
  const { client } = await RawClient.session(server.url);
  const N = 48;
  // All requests written at once: the server reads them together, as in the benchmark's burst.
  const answers: Array<Promise<unknown>> = [];
  for (let i = 0; i < N; i++) answers.push(client.call('process/start', startParams(`b${i}`, ['/bin/true']), 100 + i));
  await Promise.all(answers);
  for (let i = 0; i < N; i++) await client.waitFor((m) => m.method === 'process/closed' && m.params.processId === `b${i}`);
  const at = (pred: (m: (typeof client.received)[number]) => boolean) => client.received.findIndex(pred);
  const firstClosed = at((m) => m.method === 'process/closed' && m.params.processId === 'b0');
  const lastAnswer = at((m) => m.id === 100 + N - 1 && m.method === undefined);
  assert.ok(firstClosed >= 0 && lastAnswer >= 0);
  const seqOf = client.received.map((m) => (m.method ? `${m.method.slice(8, 10)}:${m.params.processId}` : `a${m.id}`)).join(' ');
  assert.ok(firstClosed < lastAnswer, `b0 closed at message ${firstClosed}, the last start answered at ${lastAnswer}: ${seqOf}`);
  client.close();
});
