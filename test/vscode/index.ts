// Entry of the extension tests (the `extensionTestsPath` payload). VS Code loads this module in
// the extension host and awaits `run()`; the same entry works with @vscode/test-electron on a
// desktop VS Code. Suites are the `*.test.js` files next to it in `suite/` (or `untrusted/`).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Mocha from 'mocha';

export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', color: false, timeout: 30_000, reporter: 'spec' });
  const grep = process.env.VSCODE_TEST_GREP;
  if (grep) mocha.grep(grep);
  // The harness runs a second workbench on an untrusted folder with EXEC_BRIDGE_TEST_SUITE=untrusted.
  const dir = join(__dirname, process.env.EXEC_BRIDGE_TEST_SUITE === 'untrusted' ? 'untrusted' : 'suite');
  for (const f of readdirSync(dir).sort()) {
    if (f.endsWith('.test.js')) mocha.addFile(join(dir, f));
  }
  console.log('EXEC_BRIDGE_MOCHA_START');
  const stats = await new Promise<{ passed: number; failed: number }>((resolve, reject) => {
    try {
      const runner = mocha.run(() => resolve({ passed: runner.stats?.passes ?? 0, failed: runner.stats?.failures ?? 0 }));
    } catch (e) {
      reject(e);
    }
  });
  // One machine-readable line for the harness (scripts/vscode-test.mjs).
  console.log(`EXEC_BRIDGE_MOCHA ${JSON.stringify(stats)}`);
  if (stats.failed > 0) throw new Error(`${stats.failed} extension test(s) failed`);
  if (stats.passed === 0) throw new Error('no extension tests ran');
}
