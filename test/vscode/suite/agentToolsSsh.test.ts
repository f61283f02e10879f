// Issue 22's "done when" in the real extension host: a model (this test, calling the tools through
// vscode.lm.invokeTool as an agent does) does a build-test-fix loop on a remote executor — an SSH
// executor against the real sshd on 127.0.0.1 (test/helpers/sshd.ts), whose folder is outside /tmp
// so that only it is writable in the sandbox. Every command runs there in its own terminal, in the
// sandbox; a write beside the folder is denied and raises the approval notification.
import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import type { ApprovalChoice, PendingApproval } from '../../../src/vscode/api';
import { startSshd, type Sshd } from '../../helpers/sshd';
import { invoke, nextAgentTerminal } from './agentHelpers';
import { getApi, plain, waitFor, waitForText, withSettings } from './helpers';

suite('language-model tools on an SSH executor', () => {
  let sshd: Sshd;
  let restore: (() => Promise<void>) | undefined;
  let folder: string;
  let beside: string;

  suiteSetup(async function () {
    this.timeout(30_000);
    sshd = await startSshd();
    const varTmp = existsSync('/var/tmp') ? '/var/tmp' : sshd.dir;
    folder = realpathSync(mkdtempSync(join(varTmp, 'eb-agent-ssh-folder-')));
    beside = realpathSync(mkdtempSync(join(varTmp, 'eb-agent-ssh-beside-')));
    restore = await withSettings({
      executors: [{ name: 'devbox', ssh: `root@127.0.0.1:${sshd.port}`, sshOptions: sshd.clientOptions, cwd: folder }],
      sandbox: 'workspace-write',
      sandboxNetwork: false,
      approvalPolicy: 'ask',
    });
    const api = await getApi();
    await waitFor('the ssh executor in the list', () => api.executorNames().includes('devbox'));
  });

  suiteTeardown(async () => {
    await restore?.();
    await sshd?.stop();
    rmSync(folder, { recursive: true, force: true });
    rmSync(beside, { recursive: true, force: true });
  });

  test("a model's build-test-fix loop there: each command in its terminal on devbox, sandboxed; a denial asks the user", async function () {
    this.timeout(240_000);
    const api = await getApi();
    const project = join(folder, 'calc');
    /** One step of the model: the command on devbox, its answer and its terminal. */
    const step = async (command: string, cwd?: string) => {
      const opened = nextAgentTerminal(api);
      const answer = await invoke('execBridge_runCommand', { command, executor: 'devbox', timeoutSeconds: 150, ...(cwd ? { cwd } : {}) });
      const t = await opened;
      assert.equal(t.executor, 'devbox');
      assert.match(t.terminal.name, /^agent: .* · devbox$/);
      assert.equal(t.sandboxed, true, `${command}: in the sandbox`);
      assert.match(answer, new RegExp(`^Ran \`[^]*\` on devbox in ${cwd ? project : folder}\\.\n`), answer);
      return { answer, t };
    };

    // The project, written by the tool (the first call installs the bundle over ssh).
    const setup = await step(
      [
        'mkdir -p calc/src && cd calc',
        "printf '%s\\n' 'exports.add = (a, b) => a - b;' > src/calc.js",
        "printf '%s\\n' \"const fs = require('fs');\" \"fs.mkdirSync('dist', { recursive: true });\" \"fs.writeFileSync('dist/calc.js', '// built\\\\n' + fs.readFileSync('src/calc.js', 'utf8'));\" \"console.log('built dist/calc.js');\" > build.js",
        "printf '%s\\n' \"const assert = require('assert');\" \"const { add } = require('./dist/calc.js');\" \"assert.strictEqual(add(2, 3), 5, 'add(2, 3)');\" \"console.log('1 test passed');\" > test.js",
      ].join('\n'),
    );
    assert.match(setup.answer, /^Exit: exit code 0\.$/m);

    const failing = await step('node build.js && node test.js', 'calc');
    assert.match(failing.answer, /^Exit: exit code 1\.$/m);
    assert.match(failing.answer, /AssertionError.*add\(2, 3\)/);
    await waitForText(failing.t, /AssertionError/);

    const fix = await step("sed -i 's/a - b/a + b/' src/calc.js", 'calc');
    assert.match(fix.answer, /^Exit: exit code 0\.$/m);

    const passing = await step('node build.js && node test.js', 'calc');
    assert.match(passing.answer, /^Exit: exit code 0\.$/m);
    assert.match(passing.answer, /^1 test passed$/m);
    await waitForText(passing.t, /^1 test passed\r?$/m);
    assert.match(plain(passing.t.text()), /sandbox: workspace-write, network off/);
    // The executor's files (this machine behind the sshd) are what the tool wrote.
    assert.equal(readFileSync(join(project, 'dist', 'calc.js'), 'utf8'), '// built\nexports.add = (a, b) => a + b;\n');

    // Beside the folder the sandbox blocks a write: the notification asks; denied, the model is told.
    const asked: PendingApproval[] = [];
    const sub = api.onDidRequestApproval((p) => {
      asked.push(p);
      p.respond('Deny' satisfies ApprovalChoice);
    });
    try {
      const denied = await step(`touch ${join(beside, 'x')}`);
      assert.deepEqual(
        asked.map((a) => [a.kind, a.executor]),
        [['denied', 'devbox']],
      );
      assert.match(
        denied.answer,
        /The sandbox \(workspace-write, network off\) blocked the command .*The user refused to run it without the sandbox/,
      );
      assert.equal(existsSync(join(beside, 'x')), false);
    } finally {
      sub.dispose();
    }
  });
});
