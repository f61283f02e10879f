/**
 * Every dependency with an install script is reviewed in package.json's `allowScripts` (approved or
 * denied), and every entry there names one. npm 12 runs no dependency's install script without an
 * approval: a dependency added or swapped without one installs with npm 11 (CI's) and is silently
 * left unbuilt on a newcomer's npm 12 (node-pty without its native module: `npm start` fails).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(__dirname, '..', '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { hasInstallScript?: boolean }>;
};

/** The names of the locked packages that have an install script (`node_modules/a/node_modules/@s/b` → `@s/b`). */
const withScripts = new Set(
  Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
);
const reviewed = pkg.allowScripts ?? {};

test('every locked dependency with an install script is approved or denied in allowScripts', () => {
  assert.ok(withScripts.size > 0, 'package-lock.json lists no install script (node-pty has one): the lock was not read');
  const missing = [...withScripts].filter((name) => !(name in reviewed));
  assert.deepEqual(
    missing,
    [],
    `not in package.json's allowScripts (npm 12 would skip their install scripts): ${missing.join(', ')}; ` +
      'review each, then `npm install-scripts approve <pkg>` or `npm install-scripts deny <pkg>`',
  );
});

test('every allowScripts entry is a locked dependency with an install script, named without a version', () => {
  for (const [key, allowed] of Object.entries(reviewed)) {
    assert.equal(typeof allowed, 'boolean', `allowScripts["${key}"] must be true or false`);
    // A pinned key (name@1.2.3) stops matching at the next version bump, and npm 12 then skips the script silently.
    assert.ok(
      withScripts.has(key),
      `allowScripts["${key}"]: no locked package of that name has an install script (a stale or pinned entry)`,
    );
  }
});

test('the native module the product needs is approved', () => {
  assert.equal(reviewed['node-pty'], true, 'node-pty builds its native module in its install script');
});
