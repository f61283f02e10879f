/** What the script a pre-started sandbox's stub shell reads (src/server/sandbox stubScript) leaves to a sandbox built on the spot. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stubScript } from '../../../src/server/sandbox';

test('what env -i cannot express exactly is left to a sandbox built on the spot', () => {
  assert.equal(stubScript(3, ['/opt/a=b/tool'], { PATH: '/bin' }), undefined);
  assert.equal(stubScript(3, ['/bin/true'], { '': 'x' }), undefined);
  assert.ok(stubScript(3, ['/bin/true'], { '-x': 'y' }));
});
