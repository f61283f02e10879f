import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { SSH_INCLUDE_MAX_DEPTH, sshConfigHostsOf, sshConfigWords } from '../../../src/client/sshConfigFiles';

// Issue 24 item 7: the Add SSH Executor picker offers the Host aliases of the files ssh reads:
// ~/.ssh/config under the account's home (not $HOME), /etc/ssh/ssh_config, and their Includes.

const root = mkdtempSync(join(tmpdir(), 'eb-sshconf-'));
after(() => rmSync(root, { recursive: true, force: true }));
const write = (path: string, text: string) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
};

test('ssh_config words: Keyword=value, quotes, a comment only where a word starts', () => {
  assert.deepEqual(sshConfigWords('  Host devbox gpu'), ['Host', 'devbox', 'gpu']);
  assert.deepEqual(sshConfigWords('Host=devbox'), ['Host', 'devbox']);
  assert.deepEqual(sshConfigWords('Host = "my box" other # a comment'), ['Host', 'my box', 'other']);
  assert.deepEqual(sshConfigWords('Host a#b'), ['Host', 'a#b']);
  assert.deepEqual(sshConfigWords('# Host commented'), []);
  assert.deepEqual(sshConfigWords(''), []);
});

test('the user file, its Includes (relative under ~/.ssh, ~, globs), then the system file and its own', () => {
  const home = join(root, 'home');
  const abs = join(root, 'abs dir');
  write(
    join(home, '.ssh', 'config'),
    [
      '# mine',
      `Include config.d/*.conf ~/.ssh/extra "${abs}/x.conf" missing.conf`,
      'Host devbox gpu',
      '  HostName 10.0.0.2',
      '  Include only-for-devbox.conf',
      'Host *',
      '  Include every-host.conf',
      'host  build-1 # ci',
      'Host !bad dev? *.corp',
      'Host devbox',
      'Host="quoted name"\r',
      'Match host late',
      '  Include late.conf',
      'Match all',
      '  Include match-all.conf',
    ].join('\n'),
  );
  write(join(home, '.ssh', 'config.d', 'b.conf'), 'Host from-b\n');
  write(join(home, '.ssh', 'config.d', 'a.conf'), 'Host from-a devbox\n');
  write(join(home, '.ssh', 'config.d', '.hidden.conf'), 'Host hidden\n');
  write(join(home, '.ssh', 'config.d', 'c.txt'), 'Host not-conf\n');
  write(join(home, '.ssh', 'extra'), 'Host extra\n');
  write(join(abs, 'x.conf'), 'Host from-abs\n');
  // Read by ssh only when the destination matches their block: no alias of their own.
  write(join(home, '.ssh', 'late.conf'), 'Host in-match-block\n');
  write(join(home, '.ssh', 'only-for-devbox.conf'), 'Host in-devbox-block\n');
  write(join(home, '.ssh', 'every-host.conf'), 'Host from-every-host\n');
  write(join(home, '.ssh', 'match-all.conf'), 'Host from-match-all\n');
  const system = join(root, 'etc', 'ssh_config');
  write(system, 'Include ssh_config.d/*.conf\nHost sys-only devbox\n');
  write(join(root, 'etc', 'ssh_config.d', 'z.conf'), 'Host sys-included\n');

  assert.deepEqual(sshConfigHostsOf({ home, systemFile: system }), [
    { host: 'from-a', file: '~/.ssh/config.d/a.conf' },
    { host: 'devbox', file: '~/.ssh/config.d/a.conf' },
    { host: 'from-b', file: '~/.ssh/config.d/b.conf' },
    { host: 'extra', file: '~/.ssh/extra' },
    { host: 'from-abs', file: join(abs, 'x.conf') },
    { host: 'gpu', file: '~/.ssh/config' },
    { host: 'from-every-host', file: '~/.ssh/every-host.conf' },
    { host: 'build-1', file: '~/.ssh/config' },
    { host: 'quoted name', file: '~/.ssh/config' },
    { host: 'from-match-all', file: '~/.ssh/match-all.conf' },
    { host: 'sys-included', file: join(root, 'etc', 'ssh_config.d', 'z.conf') },
    { host: 'sys-only', file: system },
  ]);
  // No files at all: nothing offered, no error.
  assert.deepEqual(sshConfigHostsOf({ home: join(root, 'nobody'), systemFile: join(root, 'none') }), []);
});

test("Includes nest as deep as ssh's bound and no deeper; a file that includes itself ends", () => {
  const home = join(root, 'deep');
  const n = SSH_INCLUDE_MAX_DEPTH + 4;
  write(join(home, '.ssh', 'config'), 'Include f1\nHost h0\n');
  for (let i = 1; i <= n; i++) write(join(home, '.ssh', `f${i}`), `Include f${i + 1}\nHost h${i}\n`);
  const hosts = sshConfigHostsOf({ home, systemFile: join(root, 'none') }).map((h) => h.host);
  assert.deepEqual(
    hosts,
    // The deepest file first (each Include comes before its file's Host): h16 … h0, no h17.
    Array.from({ length: SSH_INCLUDE_MAX_DEPTH + 1 }, (_, i) => `h${SSH_INCLUDE_MAX_DEPTH - i}`),
  );
  const loop = join(root, 'loop');
  write(join(loop, '.ssh', 'config'), 'Include config\nHost looped\n');
  assert.deepEqual(
    sshConfigHostsOf({ home: loop, systemFile: join(root, 'none') }).map((h) => h.host),
    ['looped'],
  );
});
