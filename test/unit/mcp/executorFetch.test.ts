/**
 * The `fetch` of a server reached through the executor (src/mcp/executorFetch.ts): what it says
 * when the executor cannot reach the URL carries no query string — a server URL may hold a secret
 * there (`…/mcp?api_key=…`), and the executor's error names the URL it tried.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { executorFetch, withoutQueries } from '../../../src/mcp/executorFetch';

describe('executorFetch', () => {
  test('withoutQueries keeps origin and path of every http(s) URL in a text, and drops queries and fragments', () => {
    assert.equal(
      withoutQueries('error sending request for url (http://10.0.0.5:8080/mcp?api_key=s3cret&x=1): connection refused'),
      'error sending request for url (http://10.0.0.5:8080/mcp?…): connection refused',
    );
    assert.equal(
      withoutQueries('see https://h.example/a/b#token=abc and HTTP://X.example/'),
      'see https://h.example/a/b?… and http://x.example/',
    );
    assert.equal(withoutQueries('no url here'), 'no url here');
  });

  test("an unreachable URL's failure names the executor and the origin, never the query the executor's error quoted", async () => {
    const secret = 'api_key=s3cret-token';
    const fetch = executorFetch(
      {
        httpRequestStream: (r: { url: string }) =>
          Promise.reject(new Error(`http/request failed: error sending request for url (${r.url}): connection refused`)),
      } as never,
      'devbox',
    );
    const err = await fetch(`http://10.0.0.5:8080/mcp?${secret}`, { method: 'POST', body: '{}' }).then(
      () => assert.fail('fetch resolved'),
      (e: unknown) => e as Error,
    );
    assert.ok(err instanceof TypeError);
    assert.match(err.message, /^the executor "devbox" could not reach http:\/\/10\.0\.0\.5:8080: /);
    assert.doesNotMatch(err.message, /s3cret/);
  });
});
