import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { sshConfigHostsOf, sshUserHome } from '../../../src/client/sshConfigFiles';

// Issue 24 item 7: the Add SSH Executor picker offers the Host aliases of the files ssh reads:
// ~/.ssh/config under the account's home (not $HOME), /etc/ssh/ssh_config, and their Includes.
// Here the real ssh (and getent) check what test/unit/client/sshConfigFiles.test.ts computes.

const root = mkdtempSync(join(tmpdir(), 'eb-sshconf-'));
after(() => rmSync(root, { recursive: true, force: true }));
const write = (path: string, text: string) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
};

test('ssh itself resolves every offered host from the file we name, and none we leave out', () => {
  const dir = join(root, 'real');
  const config = join(dir, '.ssh', 'config');
  write(config, `Include ${dir}/parts/*.conf\nHost top\n  HostName 10.1.0.1\n  Include ${dir}/in-top\nHost *\n  Include ${dir}/every\n`);
  write(join(dir, 'in-top'), 'Host in-top\n  HostName 10.1.9.9\n');
  write(join(dir, 'every'), 'Host every\n  HostName 10.1.0.5\n');
  write(join(dir, 'parts', 'one.conf'), 'Host part-one\n  HostName 10.1.0.2\n');
  write(join(dir, 'parts', 'two.conf'), `Include ${dir}/deeper\nHost part-two\n  HostName 10.1.0.3\n`);
  write(join(dir, 'deeper'), 'Host deeper\n  HostName 10.1.0.4\n');
  const offered = sshConfigHostsOf({ home: dir, systemFile: join(root, 'none') });
  assert.deepEqual(
    offered.map((h) => h.host),
    ['part-one', 'deeper', 'part-two', 'top', 'every'],
  );
  const hostname = (alias: string) => /^hostname (.*)$/m.exec(execFileSync('ssh', ['-G', '-F', config, alias], { encoding: 'utf8' }))?.[1];
  const expected = { 'part-one': '10.1.0.2', 'part-two': '10.1.0.3', deeper: '10.1.0.4', top: '10.1.0.1', every: '10.1.0.5' };
  for (const h of offered)
    assert.equal(hostname(h.host), expected[h.host as keyof typeof expected], `ssh resolves ${h.host} as ${h.file} says`);
  // The one inside `Host top` is read by ssh only for top: `ssh in-top` does not know it.
  assert.equal(hostname('in-top'), 'in-top');
});

test("the home is the account's from the password database, as ssh reads it, whatever $HOME says", () => {
  const fake = join(root, 'fake-home');
  write(join(fake, '.ssh', 'config'), 'Host eb-only-in-fake-home\n  HostName 10.9.9.9\n');
  const env = { ...process.env, HOME: fake };
  // ssh ignores $HOME: the alias in $HOME/.ssh/config is not resolved.
  const conf = execFileSync('ssh', ['-G', 'eb-only-in-fake-home'], { encoding: 'utf8', env });
  assert.match(conf, /^hostname eb-only-in-fake-home$/m);
  const uid = String(process.getuid?.() ?? '');
  const passwdHome = execFileSync('getent', ['passwd', uid], { encoding: 'utf8' }).trim().split(':')[5];
  const module = join(__dirname, '..', '..', '..', 'src', 'client', 'sshConfigFiles.js');
  const seen = execFileSync(process.execPath, ['-e', `process.stdout.write(require(${JSON.stringify(module)}).sshUserHome())`], {
    encoding: 'utf8',
    env,
  });
  assert.equal(seen, passwdHome);
  assert.notEqual(seen, fake);
  assert.equal(sshUserHome(), passwdHome);
});
