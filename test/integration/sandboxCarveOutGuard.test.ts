/**
 * A running sandbox whose carve-outs the host takes away (src/server/sandbox/carveOutGuard.ts):
 * a `.codex` stub removed, or a `.git` renamed, on the host while a sandboxed command runs
 * detaches the read-only mount on it inside the sandbox. The attack that worked until then: a
 * command waiting for that moment made `.codex/config.toml` (or a `.git`) on the host. Now the
 * sandbox is stopped at once, what it made there is moved aside, and the process says why.
 * Linux with bubblewrap.
 */
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../src/protocol/sandbox';
import { until } from '../helpers/procs';
import { RawClient, startParams, startServer, type StartedServer } from '../helpers/rawClient';

const base = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : '/tmp', 'exec-bridge-carveout-')));
const uri = (p: string) => pathToFileURL(p).href;
const workspaceWrite = (ws: string) => sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws) });

/**
 * Shell text that says `ready`, then tries (a bounded number of times) to make `name` and write a
 * file in it; `wrote` when it got there. With the mount in place `mkdir` fails at once (the path
 * exists, read-only); with it gone, it succeeds.
 */
function attacker(name: string, file: string): string {
  return (
    `echo ready; i=0; while [ $i -lt 3000000 ]; do ` +
    `if mkdir ${name} 2>/dev/null; then echo pwned > ${name}/${file}; echo wrote; exit 0; fi; i=$((i+1)); done; echo gave-up`
  );
}

let counter = 0;
let dirs = 0;
function freshWorkspace(): string {
  const ws = join(base, `ws${++dirs}`);
  mkdirSync(ws, { recursive: true });
  return ws;
}

describe(
  'a carve-out taken away on the host while its sandbox runs',
  { skip: process.platform !== 'linux' && 'the bubblewrap sandbox is Linux-only' },
  () => {
    let cold: StartedServer;
    let warm: StartedServer;
    let cc: RawClient;
    let wc: RawClient;

    before(async () => {
      [cold, warm] = await Promise.all([startServer('ours', ['--sandbox-prewarm-ms', '0']), startServer('ours', ['--verbose'])]);
      cc = (await RawClient.session(cold.url)).client;
      wc = (await RawClient.session(warm.url)).client;
    });

    after(async () => {
      cc?.close();
      wc?.close();
      await Promise.all([cold?.stop(), warm?.stop()]);
      rmSync(base, { recursive: true, force: true });
    });

    /** Starts `script` sandboxed (workspace-write unless `extra` says otherwise) in `ws`; its process id. */
    async function launch(client: RawClient, ws: string, script: string, extra: Record<string, unknown> = {}): Promise<string> {
      const processId = `c${++counter}`;
      const res = await client.call(
        'process/start',
        startParams(processId, ['/bin/sh', '-c', script], { cwd: uri(ws), sandbox: workspaceWrite(ws), ...extra }),
      );
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      return processId;
    }

    /** `launch`, then until it printed `ready`. */
    async function start(client: RawClient, ws: string, script: string, extra: Record<string, unknown> = {}): Promise<string> {
      const processId = await launch(client, ws, script, extra);
      await until(() => client.output(processId).includes('ready'), 20_000, `${processId} ready`);
      return processId;
    }

    /** The exit, the output and `failure` of a process that ended. */
    async function ended(client: RawClient, processId: string) {
      const exited = (await client.processEvents(processId)).find((m) => m.method === 'process/exited')!;
      const read = await client.call('process/read', { processId });
      return { exited: exited.params, output: client.output(processId), failure: read.result.failure as string | null };
    }

    /** Nothing the command wrote is at `path`: it is absent, or an empty placeholder again; a quarantined copy holds the rest. */
    function assertNothingKept(ws: string, name: string, file: string, output: string): void {
      assert.equal(existsSync(join(ws, name, file)), false, `the sandboxed command's ${name}/${file} is on the host:\n${output}`);
      const moved = readdirSync(ws).filter((n) => n.startsWith(`${name}.exec-bridge-quarantine-`));
      if (output.includes('wrote')) {
        assert.equal(moved.length, 1, `the command won the race, so its ${name} must have been moved aside: ${readdirSync(ws).join(', ')}`);
        assert.match(output, new RegExp(`moved to ${ws}/${name.replace('.', '\\.')}\\.exec-bridge-quarantine-`));
      }
    }

    /**
     * Killed by the guard (137), unless the command won the race: then it made the path and exited
     * by itself before the watch's event was read, and only the quarantine stands between it and the host.
     */
    function assertStopped(r: { exited: Record<string, unknown>; output: string }): void {
      if (r.output.includes('wrote')) assert.ok(r.exited.exitCode === 0 || r.exited.exitCode === 137, r.output);
      else {
        assert.equal(r.exited.exitCode, 137, `stopped by SIGKILL:\n${r.output}`);
        assert.match(r.output, /exec-bridge: the sandbox was stopped: /);
      }
    }

    test('attack: the .codex stub removed on the host while the command runs stops it; its .codex/config.toml is never left in place', async () => {
      const ws = freshWorkspace();
      const id = await start(cc, ws, attacker('.codex', 'config.toml'));
      assert.equal(existsSync(join(ws, '.codex')), true, 'the placeholder is there while the command runs');
      rmSync(join(ws, '.codex'), { recursive: true, force: true });
      const r = await ended(cc, id);
      assertNothingKept(ws, '.codex', 'config.toml', r.output);
      assertStopped(r);
      assert.equal(r.exited.sandboxDenied, false, 'not a denial: an approved retry must not be offered for it');
      assert.match(
        r.output,
        new RegExp(
          `exec-bridge: (the sandbox was stopped: )?${ws}/\\.codex was (removed or renamed|replaced) on this machine while the command ran`,
        ),
      );
      assert.match(
        r.failure ?? '',
        /\.codex was (removed or renamed|replaced) on this machine while the command ran/,
        'process/read says why in `failure`',
      );
      assert.doesNotMatch(r.output, /gave-up/);
    });

    test('attack: an existing .git renamed on the host while the command runs stops it; a .git it makes is moved aside', async () => {
      const ws = freshWorkspace();
      mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
      writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
      const id = await start(cc, ws, attacker('.git', 'config'));
      renameSync(join(ws, '.git'), join(ws, '.git-old'));
      const r = await ended(cc, id);
      assertNothingKept(ws, '.git', 'config', r.output);
      assertStopped(r);
      assert.match(r.output, /\.git was (removed or renamed|replaced) on this machine while the command ran/);
      assert.equal(existsSync(join(ws, '.git-old', 'HEAD')), true, 'the renamed repository is untouched');
    });

    test('attack from inside alone: the folders above a nested .git cannot be renamed by the command (each is a mount point in the sandbox)', async () => {
      // Before, the mount on sub/.git moved along with sub, and the command made sub/.git/config in
      // its place (measured): no host help needed. The folders on the way are pinned now.
      const ws = freshWorkspace();
      mkdirSync(join(ws, 'sub', '.git'), { recursive: true });
      mkdirSync(join(ws, 'a', 'b', '.git'), { recursive: true });
      writeFileSync(join(ws, 'sub', '.git', 'HEAD'), 'ref: refs/heads/main\n');
      const tries = [
        'mv sub sub2 && mkdir -p sub/.git && echo "[core] fsmonitor = evil" > sub/.git/config && echo wrote-sub',
        'mv a x && mkdir -p a/b/.git && echo "[core] fsmonitor = evil" > a/b/.git/config && echo wrote-a',
        'rm -rf a 2>/dev/null; mkdir -p a/b/.git/hooks 2>/dev/null && echo evil > a/b/.git/hooks/pre-commit && echo wrote-rm',
        'mkdir -p sub/x && echo kept > sub/x/file && echo "nested write ok"',
      ];
      const processId = await launch(cc, ws, tries.map((t) => `( ${t} ) 2>&1`).join('; '));
      const r = await ended(cc, processId);
      assert.doesNotMatch(r.output, /wrote-/, r.output);
      assert.match(r.output, /mv: cannot move 'sub' to 'sub2': Device or resource busy/);
      assert.match(r.output, /mv: cannot move 'a' to 'x': Device or resource busy/);
      assert.match(r.output, /nested write ok/, 'the folders stay writable');
      assert.equal(r.exited.exitCode, 0, r.output);
      assert.equal(existsSync(join(ws, 'sub', '.git', 'config')), false);
      assert.equal(existsSync(join(ws, 'a', 'b', '.git', 'config')), false);
      assert.equal(existsSync(join(ws, 'sub', 'x', 'file')), true);
      assert.equal(r.failure, null, 'no carve-out moved: nothing to report');
    });

    test('a rename the pins refuse (a folder above a nested .git, a file into it) is a sandbox denial: the user is offered the retry', async () => {
      const ws = freshWorkspace();
      mkdirSync(join(ws, 'sub', '.git'), { recursive: true });
      writeFileSync(join(ws, 'x'), 'x\n');
      for (const [script, evidence] of [
        ['mv sub sub2', /Device or resource busy/],
        [`'${process.execPath}' -e 'require("fs").renameSync("x", "sub/x")'`, /EXDEV: cross-device link not permitted/],
      ] as const) {
        const r = await ended(cc, await launch(cc, ws, script));
        assert.match(r.output, evidence);
        assert.equal(r.exited.exitCode, 1, r.output);
        assert.equal(r.exited.sandboxDenied, true, `${script}: ${r.output}`);
      }
      assert.equal(existsSync(join(ws, 'sub', 'x')), false);
    });

    test('attack from inside alone: the folders made for a placeholder (a denied path, a missing gitdir: target) are pinned too', async () => {
      // bwrap made `a` and `a/b` for the mount on a/b/secret, unpinned: the command renamed `a` and
      // wrote a/b/secret for the host to find. A nested .git pointer's missing target was not protected at all.
      const ws = freshWorkspace();
      mkdirSync(join(ws, 'sub'));
      writeFileSync(join(ws, 'sub', '.git'), 'gitdir: ../wt/x\n');
      const sandbox = workspaceWrite(ws) as { permissions: { file_system: { entries: unknown[] } } };
      sandbox.permissions.file_system.entries.push({ path: { type: 'path', path: uri(join(ws, 'a', 'b', 'secret')) }, access: 'deny' });
      const tries = [
        'mv a x && mkdir -p a/b && echo pwned > a/b/secret && echo wrote-secret',
        'echo pwned > a/b/secret && echo wrote-in-place',
        'mkdir -p wt/x/hooks && echo evil > wt/x/hooks/pre-commit && echo wrote-hook',
        'mv wt wt2 && mkdir -p wt/x/hooks && echo evil > wt/x/hooks/pre-commit && echo wrote-moved-hook',
        'mkdir -p a/other && echo ok > a/other/f && echo "made beside it"',
      ];
      const processId = await launch(cc, ws, tries.map((t) => `( ${t} ) 2>&1`).join('; '), { sandbox });
      const r = await ended(cc, processId);
      assert.doesNotMatch(r.output, /wrote-/, r.output);
      assert.match(r.output, /mv: cannot move 'a' to 'x': Device or resource busy/, r.output);
      assert.match(r.output, /mv: cannot move 'wt' to 'wt2': Device or resource busy/, r.output);
      assert.match(r.output, /made beside it/, 'the folders stay writable');
      assert.equal(existsSync(join(ws, 'a', 'b', 'secret')), false);
      assert.equal(existsSync(join(ws, 'wt', 'x', 'hooks')), false);
      assert.equal(existsSync(join(ws, 'x')), false);
    });

    test('attack from inside: no user namespace of its own, so no way to pivot away from the mounts and rename .git (network off and on)', async () => {
      // With one, `unshare -Urm`, a pivot_root and a lazy umount of the old root detached every
      // mount of the sandbox, and renaming .git then freed the path (measured by a review).
      for (const network of [false, true]) {
        const ws = freshWorkspace();
        mkdirSync(join(ws, '.git'));
        writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
        const script = [
          '( unshare -Ur true && echo userns-made ) 2>&1',
          '( unshare -Urm sh -c "mv .git .git-moved && mkdir .git && echo evil > .git/config && echo wrote" ) 2>&1',
          '( mv .git .git-moved ) 2>&1',
          'echo done',
        ].join('; ');
        const processId = await launch(cc, ws, script, { sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: uri(ws), network }) });
        const r = await ended(cc, processId);
        assert.doesNotMatch(r.output, /userns-made|wrote/, r.output);
        assert.match(r.output, /unshare: unshare failed: Operation not permitted/, r.output);
        assert.match(r.output, /mv: cannot move '\.git' to '\.git-moved': Device or resource busy/, r.output);
        assert.match(r.output, /done/);
        assert.equal(readFileSync(join(ws, '.git', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n');
        assert.equal(existsSync(join(ws, '.git-moved')), false);
      }
    });

    test('attack: a folder above a nested .git renamed on the host while the command runs; the folder it makes in its place is moved aside', async () => {
      const ws = freshWorkspace();
      mkdirSync(join(ws, 'a', 'b', '.git'), { recursive: true });
      // Waits for `a` to go, then makes a/b/.git/config in its place.
      const script =
        'echo ready; i=0; while [ $i -lt 3000000 ]; do ' +
        'if [ ! -e a ] && mkdir -p a/b/.git 2>/dev/null; then echo pwned > a/b/.git/config; echo wrote; exit 0; fi; i=$((i+1)); done; echo gave-up';
      const id = await start(cc, ws, script);
      renameSync(join(ws, 'a'), join(ws, 'x'));
      const r = await ended(cc, id);
      assertStopped(r);
      assert.equal(existsSync(join(ws, 'a', 'b', '.git', 'config')), false, `the command's a/b/.git/config is on the host:\n${r.output}`);
      assert.match(r.output, new RegExp(`${ws}/a/b/\\.git \\(${ws}/a above it went\\) was removed or renamed on this machine`));
      if (r.output.includes('wrote'))
        assert.match(r.output, new RegExp(`what was at ${ws}/a may be the command's: it was moved to ${ws}/a\\.exec-bridge-quarantine-`));
      assert.equal(existsSync(join(ws, 'x', 'b', '.git')), true, "the user's renamed folder is untouched");
    });

    test('attack: a .vscode that is a link, re-pointed by the command, is moved aside; the folder above a nested link cannot be renamed', async () => {
      // A link cannot be a mount point: its target is bound read-only, but the link itself sits in
      // the writable root. Before, `rm .vscode && mkdir .vscode` gave the command VS Code's tasks.
      const ws = freshWorkspace();
      mkdirSync(join(ws, 'other', 'real'), { recursive: true });
      writeFileSync(join(ws, 'other', 'real', 'settings.json'), '{}\n');
      symlinkSync(join(ws, 'other', 'real'), join(ws, '.vscode'));
      mkdirSync(join(ws, 'n'));
      symlinkSync(join(ws, 'other', 'real'), join(ws, 'n', '.vscode'));
      const script =
        '( mv n n2 ) 2>&1; ' +
        'rm .vscode && mkdir .vscode && echo \'{"version":"2.0.0","tasks":[{"label":"x","command":"evil","runOptions":{"runOn":"folderOpen"}}]}\' > .vscode/tasks.json && echo wrote';
      const processId = await launch(cc, ws, script);
      const r = await ended(cc, processId);
      assert.match(r.output, /mv: cannot move 'n' to 'n2': Device or resource busy/);
      assert.equal(existsSync(join(ws, '.vscode', 'tasks.json')), false, `the command's .vscode/tasks.json is on the host:\n${r.output}`);
      assert.match(r.output, new RegExp(`${ws}/\\.vscode (was removed or renamed|was replaced) on this machine while the command ran`));
      if (r.output.includes('wrote')) assert.match(r.output, /it was moved to \S+\/\.vscode\.exec-bridge-quarantine-\w+\/\.vscode/);
      assert.equal(readFileSync(join(ws, 'other', 'real', 'settings.json'), 'utf8'), '{}\n', 'the link target untouched');
    });

    test('attack: a link the .vscode link points through, or the missing end of a dangling one, cannot give the command the name', async () => {
      // .vscode -> a -> real/vs, and sub/.vscode -> ../cfg (missing). Before, the command replaced
      // `a` with a folder of its own, or made cfg/tasks.json, and the name was its (a review, measured).
      const ws = freshWorkspace();
      mkdirSync(join(ws, 'real', 'vs'), { recursive: true });
      symlinkSync('real/vs', join(ws, 'a'));
      symlinkSync(join(ws, 'a'), join(ws, '.vscode'));
      mkdirSync(join(ws, 'sub'));
      symlinkSync('../cfg', join(ws, 'sub', '.vscode'));
      const script = [
        '( mkdir -p cfg && echo evil > cfg/tasks.json && echo wrote-cfg ) 2>&1',
        '( rm a && mkdir a && echo evil > a/tasks.json && echo wrote-a ) 2>&1',
      ].join('; ');
      const processId = await launch(cc, ws, script);
      const r = await ended(cc, processId);
      assert.doesNotMatch(r.output, /wrote-cfg/, `the dangling end is a read-only placeholder:\n${r.output}`);
      assert.equal(existsSync(join(ws, 'cfg', 'tasks.json')), false);
      assert.equal(existsSync(join(ws, '.vscode', 'tasks.json')), false, `.vscode/tasks.json is the command's:\n${r.output}`);
      assert.match(r.output, new RegExp(`${ws}/a (was removed or renamed|was replaced) on this machine while the command ran`));
    });

    test('attack: in a terminal (tty) the same, and its words end the terminal', async () => {
      const ws = freshWorkspace();
      const id = await start(cc, ws, attacker('.vscode', 'tasks.json'), { tty: true });
      rmSync(join(ws, '.vscode'), { recursive: true, force: true });
      const r = await ended(cc, id);
      assertNothingKept(ws, '.vscode', 'tasks.json', r.output);
      assertStopped(r);
      assert.match(r.output, /\r\nexec-bridge: (the sandbox was stopped: )?\S+\/\.vscode was (removed or renamed|replaced)/);
    });

    test('attack: in a sandbox built ahead of time the same', async () => {
      const ws = freshWorkspace();
      const count = (s: string) => warm.stderr().split(s).length - 1;
      // The first start leaves a sandbox waiting for the next one like it: the attacker runs there.
      const built = count('built one for the next start like this');
      await ended(wc, await start(wc, ws, 'echo ready'));
      await until(() => count('built one for the next start like this') > built, 10_000, 'a sandbox built ahead of time');
      const used = count('running in the waiting sandbox');
      const id = await start(wc, ws, attacker('.codex', 'config.toml'));
      assert.equal(
        count('running in the waiting sandbox'),
        used + 1,
        `the attacker ran in the waiting sandbox:\n${warm.stderr().slice(-1500)}`,
      );
      rmSync(join(ws, '.codex'), { recursive: true, force: true });
      const r = await ended(wc, id);
      assertNothingKept(ws, '.codex', 'config.toml', r.output);
      assertStopped(r);
      assert.match(r.output, /\.codex was (removed or renamed|replaced)/);
    });

    test('changes beside the carve-outs leave the command running; the guard lets go of every folder when the processes end', async () => {
      const ws = freshWorkspace();
      const id = await start(cc, ws, 'echo ready; read line; echo "got $line"; read more; echo done', { pipeStdin: true });
      // Files made, replaced and removed next to the stubs, and names that only start like them.
      writeFileSync(join(ws, 'other.txt'), 'x');
      renameSync(join(ws, 'other.txt'), join(ws, 'renamed.txt'));
      rmSync(join(ws, 'renamed.txt'));
      mkdirSync(join(ws, '.codexx'));
      rmSync(join(ws, '.codexx'), { recursive: true });
      writeFileSync(join(ws, '.git.bak'), 'x');
      await cc.call('process/write', { processId: id, chunk: Buffer.from('one\n').toString('base64'), writeId: 'w1' });
      await until(() => cc.output(id).includes('got one'), 10_000, 'the command answered after the changes');
      // The watch is live: the stub going now stops it.
      rmSync(join(ws, '.codex'), { recursive: true, force: true });
      const r = await ended(cc, id);
      assertStopped(r);
      assert.doesNotMatch(r.output, /done/);
      assert.match(r.output, /\.codex was removed or renamed/);
    });
  },
);
