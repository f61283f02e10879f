import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyExit, pathsIn, type DenialContext } from '../../../src/server/sandbox/denial';

// Outputs below were captured from real runs on the dev VM (bwrap 0.8.0, Debian 12), inside the
// sandbox this project builds, unless marked otherwise.
const WS = '/root/ws';
const WORKSPACE_WRITE_NET_OFF: DenialContext = {
  fsRestricted: true,
  networkRestricted: true,
  cwd: WS,
  writableRoots: [WS, '/tmp'],
  protectedPaths: [`${WS}/.git`, `${WS}/.vscode`, `${WS}/.codex`],
};
/** A workspace with a nested repository in `sub` (so `sub` is pinned: bound onto itself). */
const PINNED: DenialContext = {
  ...WORKSPACE_WRITE_NET_OFF,
  protectedPaths: [...WORKSPACE_WRITE_NET_OFF.protectedPaths, `${WS}/sub/.git`],
  pinnedFolders: [`${WS}/sub`],
};
const READ_ONLY_NET_ON: DenialContext = { fsRestricted: true, networkRestricted: false, cwd: WS, writableRoots: [], protectedPaths: [] };
const FULL_DISK_NET_OFF: DenialContext = {
  fsRestricted: false,
  networkRestricted: true,
  cwd: WS,
  writableRoots: ['/'],
  protectedPaths: [],
};
const UNSANDBOXED: DenialContext = { fsRestricted: false, networkRestricted: false, cwd: WS, writableRoots: ['/'], protectedPaths: [] };

interface Case {
  name: string;
  exit: number;
  output: string;
  ctx?: DenialContext;
  /** Expected verdict kind (`fs`, `network`, `permission` are denials). */
  kind: 'fs' | 'network' | 'permission' | 'none' | 'possible' | 'setup';
}

const MUST_COUNT: Case[] = [
  { name: 'touch outside the workspace', exit: 1, output: "touch: cannot touch '/etc/x': Read-only file system\n", kind: 'fs' },
  { name: 'sh redirection', exit: 2, output: '/bin/sh: 1: cannot create /etc/x: Read-only file system\n', kind: 'fs' },
  {
    name: 'mkdir in read-only',
    exit: 1,
    output: "mkdir: cannot create directory 'build': Read-only file system\n",
    ctx: READ_ONLY_NET_ON,
    kind: 'fs',
  },
  {
    name: 'mkdir of a missing carve-out (placeholder)',
    exit: 1,
    output: "mkdir: cannot create directory '.codex': File exists\n",
    kind: 'fs',
  },
  { name: 'mv of .git (mount point)', exit: 1, output: "mv: cannot move '.git' to 'g2': Device or resource busy\n", kind: 'fs' },
  { name: 'git commit', exit: 128, output: "fatal: Unable to create '/root/ws/.git/index.lock': Read-only file system\n", kind: 'fs' },
  {
    name: 'python open()',
    exit: 1,
    output:
      'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nOSError: [Errno 30] Read-only file system: \'/usr/x\'\n',
    kind: 'fs',
  },
  {
    name: 'node writeFileSync',
    exit: 1,
    output:
      "node:fs:2380\n    return binding.writeFileUtf8(\n\nError: EROFS: read-only file system, open '/etc/x'\n    at Object.writeFileSync (node:fs:2380:20)\n",
    kind: 'fs',
  },
  {
    name: 'npm install (cache outside the workspace)',
    exit: 1,
    ctx: READ_ONLY_NET_ON,
    output:
      "npm error code EROFS\nnpm error syscall open\nnpm error path /root/.npm/_cacache/tmp/***\nnpm error errno EROFS\nnpm error rofs Invalid response body while trying to fetch https://registry.npmjs.org/left-pad: EROFS: read-only file system, open '/root/.npm/_cacache/tmp/***'\nnpm error Log files were not written due to an error writing to the directory: /root/.npm/_logs\n",
    kind: 'fs',
  },
  {
    name: 'npm install, network off',
    exit: 1,
    output:
      'npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error errno EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n',
    kind: 'network',
  },
  {
    name: 'curl to an address',
    exit: 7,
    output: "curl: (7) Failed to connect to 203.0.113.1 port 80 after 0 ms: Couldn't connect to server\n",
    kind: 'network',
  },
  { name: 'curl to a name', exit: 6, output: 'curl: (6) Could not resolve host: example.com\n', kind: 'network' },
  {
    name: 'git over https',
    exit: 128,
    output: "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com\n",
    kind: 'network',
  },
  {
    name: 'python urllib',
    exit: 1,
    output: 'urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n',
    kind: 'network',
  },
  {
    name: 'node connect (seccomp EPERM)',
    exit: 1,
    output: 'connect EPERM 203.0.113.1:80 - Local (undefined:undefined)\n',
    kind: 'network',
  },
  { name: 'node dns', exit: 1, output: 'Error: getaddrinfo EAI_AGAIN example.com\n', ctx: FULL_DISK_NET_OFF, kind: 'network' },
  {
    name: 'python unix socket to a host socket (seccomp EPERM)',
    exit: 1,
    output:
      'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n    s.connect("/tmp/x.sock")\nPermissionError: [Errno 1] Operation not permitted\n',
    kind: 'network',
  },
  { name: 'unreachable route', exit: 1, output: 'Error: connect ENETUNREACH 203.0.113.1:80\n', kind: 'network' },
  {
    name: 'remount attempt',
    exit: 32,
    output: 'mount: /: permission denied.\n       dmesg(1) may have more information after failed mount system call.\n',
    kind: 'permission',
  },
  {
    name: 'EACCES on a path the policy blocks',
    exit: 1,
    output: "Error: EACCES: permission denied, open '/etc/hosts.new'\n",
    kind: 'permission',
  },
  {
    name: 'nested user namespace',
    exit: 1,
    output: 'unshare: write failed /proc/self/uid_map: Operation not permitted\n',
    kind: 'permission',
  },
  {
    name: 'PTY output with escapes and CRLF',
    exit: 1,
    output: "\x1b[31mtouch: cannot touch '/etc/x': Read-only file system\x1b[0m\r\n",
    kind: 'fs',
  },
  {
    name: '"Permission denied" but 126 with a blocked path',
    exit: 126,
    output: 'sh: 1: /etc/newscript: Permission denied\n',
    kind: 'permission',
  },
];

// A pinned folder: outside the sandbox the rename works (captured with `exec-bridge run --sandbox workspace-write`).
MUST_COUNT.push(
  { name: 'mv of a pinned folder', exit: 1, output: "mv: cannot move 'sub' to 'sub2': Device or resource busy\n", ctx: PINNED, kind: 'fs' },
  {
    name: 'Python rename into a pinned folder',
    exit: 1,
    output:
      "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nOSError: [Errno 18] Invalid cross-device link: 'deep/a/y' -> 'sub/y'\n",
    ctx: PINNED,
    kind: 'fs',
  },
  {
    name: 'Node rename into a pinned folder',
    exit: 1,
    output: "Error: EXDEV: cross-device link not permitted, rename 'x' -> 'sub/x2'\n    at Object.renameSync (node:fs:1032:11)\n",
    ctx: PINNED,
    kind: 'fs',
  },
);

const MUST_NOT_COUNT: Case[] = [
  // The same lines about folders that are not pinned are not the sandbox's doing.
  {
    name: 'mv of a busy folder that is not pinned',
    exit: 1,
    output: "mv: cannot move 'mnt' to 'm2': Device or resource busy\n",
    ctx: PINNED,
    kind: 'none',
  },
  {
    name: 'a rename across real file systems',
    exit: 1,
    output: "OSError: [Errno 18] Invalid cross-device link: '/tmp/y' -> 'build/y'\n",
    ctx: PINNED,
    kind: 'none',
  },
  { name: 'exit 0 even with a matching line', exit: 0, output: "touch: cannot touch '/etc/x': Read-only file system\n", kind: 'none' },
  { name: 'grep without a match', exit: 1, output: '', kind: 'none' },
  { name: 'a missing file', exit: 1, output: 'cat: missing.txt: No such file or directory\n', kind: 'none' },
  { name: 'ls of a missing path', exit: 2, output: "ls: cannot access '/nope': No such file or directory\n", kind: 'none' },
  {
    name: 'a failing test run',
    exit: 1,
    output:
      "not ok 1 - adds\n  ---\n  error: 'Expected values to be strictly equal:\\n\\n1 !== 2\\n'\n  code: 'ERR_ASSERTION'\n# tests 1\n# pass 0\n# fail 1\n",
    kind: 'none',
  },
  {
    name: 'a test suite that only talks about the sandbox',
    exit: 1,
    output: 'FAIL sandbox.test.ts > seccomp filter > allows socketpair\nexpected 1 to equal 2\n',
    kind: 'none',
  },
  { name: 'command not found', exit: 127, output: 'sh: 1: frobnicate: not found\n', kind: 'none' },
  {
    name: 'ssh key refused',
    exit: 255,
    output: 'git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n',
    ctx: { ...WORKSPACE_WRITE_NET_OFF, networkRestricted: false },
    kind: 'none',
  },
  {
    name: 'permission error inside the workspace (own file mode)',
    exit: 1,
    output: 'cat: /root/ws/secret: Permission denied\n',
    kind: 'possible',
  },
  { name: 'loopback service not running', exit: 1, output: 'Error: connect ECONNREFUSED 127.0.0.1:5432\n', kind: 'possible' },
  {
    name: 'network error while the network was on',
    exit: 6,
    output: 'curl: (6) Could not resolve host: example.com\n',
    ctx: READ_ONLY_NET_ON,
    kind: 'none',
  },
  {
    name: 'read-only error while writes were not restricted',
    exit: 1,
    output: "touch: cannot touch '/mnt/cdrom/x': Read-only file system\n",
    ctx: FULL_DISK_NET_OFF,
    kind: 'none',
  },
  {
    name: 'an unsandboxed run is never judged',
    exit: 1,
    output: "touch: cannot touch '/etc/x': Read-only file system\n",
    ctx: UNSANDBOXED,
    kind: 'none',
  },
  { name: 'bwrap launcher error', exit: 1, output: "bwrap: Can't find source path /nope: No such file or directory\n", kind: 'setup' },
  { name: 'bwrap execvp of a missing command', exit: 1, output: 'bwrap: execvp frobnicate: No such file or directory\n', kind: 'setup' },
  { name: '"File exists" outside any carve-out', exit: 1, output: "mkdir: cannot create directory 'build': File exists\n", kind: 'none' },
];

for (const c of [...MUST_COUNT, ...MUST_NOT_COUNT]) {
  test(`denial heuristic: ${c.name} ⇒ ${c.kind}`, () => {
    const ctx = c.ctx ?? WORKSPACE_WRITE_NET_OFF;
    const v = classifyExit(c.exit, [Buffer.from(c.output)], ctx);
    assert.equal(v.kind, c.kind, JSON.stringify(v));
    assert.equal(v.denied, c.kind === 'fs' || c.kind === 'network' || c.kind === 'permission');
    if (v.kind !== 'none') assert.ok(v.evidence.length > 0 && !v.evidence.includes('\x1b'));
  });
}

test('the strongest evidence wins, and only the tail of a long output is scanned', () => {
  const noise = 'x'.repeat(100) + '\n';
  const v = classifyExit(
    1,
    [Buffer.from('cat: /root/ws/a: Permission denied\n'), Buffer.from("touch: cannot touch '/etc/x': Read-only file system\n")],
    WORKSPACE_WRITE_NET_OFF,
  );
  assert.deepEqual([v.kind, v.denied], ['fs', true]);
  const old = classifyExit(
    1,
    [Buffer.from("touch: cannot touch '/etc/x': Read-only file system\n"), Buffer.from(noise.repeat(1000))],
    WORKSPACE_WRITE_NET_OFF,
  );
  assert.equal(old.kind, 'none', 'an error 100 KB before the end is not what ended the run');
  // Chunks split in the middle of a line (and of a UTF-8 sequence) are joined before matching.
  const split = classifyExit(
    1,
    [Buffer.from("touch: cannot touch '/etc/é"), Buffer.from("': Read-only file sys"), Buffer.from('tem\n')],
    WORKSPACE_WRITE_NET_OFF,
  );
  assert.equal(split.kind, 'fs');
});

test('pathsIn extracts quoted and bare paths, resolving relative ones against the cwd', () => {
  assert.deepEqual(pathsIn("mkdir: cannot create directory '.codex': File exists", '/w'), ['/w/.codex']);
  assert.deepEqual(pathsIn("Error: EACCES: permission denied, open '/etc/x'", '/w'), ['/etc/x']);
  assert.deepEqual(pathsIn('cat: /root/ws/secret: Permission denied', '/w'), ['/root/ws/secret']);
  assert.deepEqual(pathsIn("fatal: unable to access 'https://github.com/x/y/': nope", '/w'), []);
});
