// lint-as: scripts/fixture.mjs
// A script of scripts/ that starts an async step and goes on without it: its failure would be an
// unhandled rejection after the script has said it is done. Awaited, caught or marked `void` is fine.
// expect: @typescript-eslint/no-floating-promises: Promises must be awaited, end with a call to .catch, end with a call to .then with a rejection handler or be explicitly marked as ignored with the `void` operator.
// expect: @typescript-eslint/no-misused-promises: Promise returned in function argument where a void return was expected.
import { setTimeout as sleep } from 'node:timers/promises';

async function step(name) {
  await sleep(1);
  return name;
}

step('build');
['unit', 'integration'].forEach(async (suite) => console.log(await step(suite)));

console.log(await step('awaited'));
void step('marked');
step('caught').catch((e) => console.error(e));
