import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { EXECUTOR_FILES, executorFiles, executorHash } from './daemonStart';

/*
 * The remote bootstrap of an SSH executor: what the ssh process runs on the remote (probe the
 * platform and Node, then install our bundle atomically if that version is missing) and the bundle
 * it uploads. The connection and relay around it live in sshConnector.
 */

interface BundleFile {
  path: string;
  abs: string;
  mode: number;
}

export interface Bundle {
  version: string;
  files: BundleFile[];
  /** Where the remote's node-pty native build came from; null: none fits (pipes only, PTYs fail). */
  ptyFrom: string | null;
  /** `{files, sha256}` header line + concatenated contents. */
  payload(): Buffer;
  bytes: number;
}

/** `uname -sm` → node's `platform-arch` (node-pty's prebuild names), or undefined for what we do not know. */
export function platformKey(uname: string): string | undefined {
  const [os = '', machine = ''] = uname.split(' ');
  const p = os === 'Linux' ? 'linux' : os === 'Darwin' ? 'darwin' : undefined;
  const a = machine === 'x86_64' || machine === 'amd64' ? 'x64' : machine === 'aarch64' || machine === 'arm64' ? 'arm64' : undefined;
  return p && a ? `${p}-${a}` : undefined;
}

/**
 * Where a node-pty native build for `key` is: `dist/native/<key>/` beside the bundle (what a
 * packaged VSIX carries for SSH hosts, scripts/package.mjs), node-pty's own `prebuilds/<key>/`
 * (darwin), or its `build/Release/` when `key` is this machine.
 */
function nativeDirFor(key: string | undefined, cliPath: string, pty: string): string | null {
  if (!key) return null;
  const local = `${process.platform}-${process.arch}`;
  for (const d of [
    join(dirname(cliPath), 'native', key),
    join(pty, 'prebuilds', key),
    ...(key === local ? [join(pty, 'build', 'Release')] : []),
  ])
    if (existsSync(join(d, 'pty.node'))) return d;
  return null;
}

/**
 * The uploaded tree: the executor's files (`dist/cli.js` and `dist/cli/server.js`, EXECUTOR_FILES:
 * not the client commands' bundles) and, when a native build for the remote's platform is at
 * hand, node-pty. Its version is the one the remote daemon's bundleKey computes from those files.
 */
export function bundleFor(cliPath: string, nodePtyDir: string | null | undefined, remotePlatform: string): Bundle {
  const version = `${versionOf(cliPath)}-${executorHash(cliPath)}`;
  const files: BundleFile[] = executorFiles(cliPath).map((abs, i) => ({ path: `dist/${EXECUTOR_FILES[i]}`, abs, mode: 0o644 }));
  const pty = nodePtyDir === undefined ? findNodePty(cliPath) : nodePtyDir;
  const native = pty ? nativeDirFor(platformKey(remotePlatform), cliPath, pty) : null;
  if (pty && native) {
    const add = (rel: string, abs = join(pty, rel), mode = 0o644) => {
      if (existsSync(abs)) files.push({ path: `node_modules/node-pty/${rel}`, abs, mode });
    };
    add('package.json');
    for (const sub of ['lib', 'lib/shared']) for (const name of safeList(join(pty, sub))) if (name.endsWith('.js')) add(`${sub}/${name}`);
    // Where node-pty looks first, whichever folder it came from.
    add('build/Release/pty.node', join(native, 'pty.node'), 0o755);
    add('build/Release/spawn-helper', join(native, 'spawn-helper'), 0o755);
  }
  const bytes = files.reduce((n, f) => n + statSync(f.abs).size, 0);
  return {
    version,
    files,
    ptyFrom: pty && native ? native : null,
    bytes,
    payload() {
      const parts = files.map((f) => readFileSync(f.abs));
      const body = Buffer.concat(parts);
      const header = {
        version,
        sha256: createHash('sha256').update(body).digest('hex'),
        files: files.map((f, i) => ({ path: f.path, size: parts[i]!.length, mode: f.mode })),
      };
      return Buffer.concat([Buffer.from(JSON.stringify(header) + '\n'), body]);
    },
  };
}

/** The version in the package.json beside the bundle's folder (the extension's or the repo's), else 0.0.0. */
function versionOf(cliPath: string): string {
  try {
    const pkg = JSON.parse(readFileSync(join(dirname(dirname(cliPath)), 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' && /^[\w.-]+$/.test(pkg.version) ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function findNodePty(cliPath: string): string | null {
  for (let d = dirname(cliPath), i = 0; i < 6; i++, d = dirname(d)) {
    const p = join(d, 'node_modules', 'node-pty');
    if (existsSync(join(p, 'package.json'))) return p;
  }
  return null;
}

/** This machine as `uname -sm` says it (for matching node-pty's native build). */
export function localUname(): string {
  const os = process.platform === 'linux' ? 'Linux' : process.platform === 'darwin' ? 'Darwin' : process.platform;
  const arch =
    process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? (process.platform === 'darwin' ? 'arm64' : 'aarch64') : process.arch;
  return `${os} ${arch}`;
}

/*
 * The remote side, run by the login shell as `exec /bin/sh -c '…'` (no single quotes inside): a
 * probe line, then Node (≥ 20, Linux or macOS only) runs BOOTSTRAP_JS.
 */
const BOOTSTRAP_JS = `
const fs = require('fs'), path = require('path'), os = require('os'), crypto = require('crypto');
const [node, , key, ...relay] = process.argv;
const base = path.join(os.homedir(), '.exec-bridge');
const dir = path.join(base, 'server', key);
const cli = path.join(dir, 'dist', 'cli.js');
const say = (s) => process.stdout.write(s + '\\n');
const fail = (what, e) => {
  say('EB-ERROR ' + what + ' ' + ((e && e.code) || '-') + ' ' + String((e && e.message) || e).replace(/\\s+/g, ' '));
  process.exit(3);
};
const start = () => {
  process.stdin.removeAllListeners('end');
  process.argv = [node, cli, 'connect', '--ready-line', ...relay];
  require(cli);
};
const install = (hdr, body) => {
  if (crypto.createHash('sha256').update(body).digest('hex') !== hdr.sha256) fail('upload', 'checksum mismatch');
  fs.mkdirSync(path.join(base, 'server'), { recursive: true, mode: 0o700 });
  fs.mkdirSync(path.join(base, 'bin'), { recursive: true, mode: 0o700 });
  const tmp = fs.mkdtempSync(path.join(base, 'server', '.tmp-' + key + '-'));
  let off = 0;
  for (const f of hdr.files) {
    const p = path.join(tmp, f.path);
    if (!p.startsWith(tmp + path.sep)) fail('upload', 'bad path ' + f.path);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, body.subarray(off, off + f.size), { mode: f.mode });
    off += f.size;
  }
  fs.mkdirSync(path.join(tmp, 'bin'));
  fs.writeFileSync(path.join(tmp, 'bin', 'exec-bridge'), '#!/bin/sh\\nexec "' + node + '" "' + cli + '" "$@"\\n', { mode: 0o755 });
  fs.writeFileSync(path.join(tmp, '.complete'), key + '\\n');
  try {
    fs.renameSync(tmp, dir);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, '.complete'))) throw e;
  }
  const link = path.join(base, 'bin', '.exec-bridge-' + process.pid);
  fs.rmSync(link, { force: true });
  fs.symlinkSync(path.join(dir, 'bin', 'exec-bridge'), link);
  fs.renameSync(link, path.join(base, 'bin', 'exec-bridge'));
  // Older versions go once unused: no live daemon named in their daemon.pid.
  for (const name of fs.readdirSync(path.join(base, 'server'))) {
    const other = path.join(base, 'server', name);
    if (name === key || name.startsWith('.tmp-')) continue;
    let pid = 0;
    try {
      pid = Number(fs.readFileSync(path.join(other, 'daemon.pid'), 'utf8'));
    } catch {}
    let alive = false;
    try {
      alive = pid > 0 && (process.kill(pid, 0), true);
    } catch (e) {
      alive = e.code === 'EPERM';
    }
    if (!alive) fs.rmSync(other, { recursive: true, force: true });
  }
};
if (fs.existsSync(path.join(dir, '.complete'))) {
  say('EB-HAVE ' + key);
  start();
} else {
  say('EB-SEND ' + key);
  let buf = Buffer.alloc(0), hdr, need = 0;
  const onData = (d) => {
    buf = Buffer.concat([buf, d]);
    if (!hdr) {
      const i = buf.indexOf(10);
      if (i < 0) return;
      hdr = JSON.parse(buf.subarray(0, i).toString());
      buf = buf.subarray(i + 1);
      need = hdr.files.reduce((a, f) => a + f.size, 0);
    }
    if (buf.length < need) return;
    process.stdin.off('data', onData);
    process.stdin.pause();
    if (buf.length > need) process.stdin.unshift(buf.subarray(need));
    try {
      install(hdr, buf.subarray(0, need));
    } catch (e) {
      fail('install', e);
    }
    say('EB-INSTALLED ' + key);
    start();
  };
  process.stdin.on('data', onData);
  process.stdin.on('end', () => fail('upload', 'the connection ended during the upload'));
}
`;

/**
 * The remote side's private directory as `privateDirCandidates()[0]` (src/util/privateDir.ts) finds
 * it, in sh: `$EXEC_BRIDGE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/exec-bridge` when that is a plain
 * directory of ours only we can open, else `/tmp` (Linux) or `$TMPDIR` + `/exec-bridge-<uid>`.
 * Should it ever differ, the fast path finds no daemon and Node's bootstrap runs (slower, as right).
 */
export const REMOTE_PRIVATE_DIR_SH = [
  'r=',
  'case "$EXEC_BRIDGE_RUNTIME_DIR" in /*) r=$EXEC_BRIDGE_RUNTIME_DIR;; esac',
  'x=$XDG_RUNTIME_DIR',
  'if [ -z "$r" ] && [ -n "$x" ] && [ -d "$x" ] && [ ! -h "$x" ] && [ -O "$x" ]; then case "$x" in /*) case $(ls -ld "$x" 2>/dev/null) in d???------*) r=$x/exec-bridge;; esac;; esac; fi',
  'if [ -z "$r" ]; then t=/tmp; [ "$(uname -s 2>/dev/null)" = Linux ] || t=${TMPDIR:-/tmp}; r=${t%/}/exec-bridge-$(id -u 2>/dev/null); fi',
];

/**
 * The fast path (a shared connection, see sshShare): when `versionKey`'s daemon runs, print
 * `EB-DAEMON <token> <state.json>` with no Node started, then wait for the client's word on stdin:
 * end of input (it reached the daemon through a forward) ends the session; `relay` goes on with
 * the bootstrap in this same session.
 */
function fastPathSh(versionKey: string): string[] {
  return [
    ...REMOTE_PRIVATE_DIR_SH,
    `d=$r/daemon-${versionKey}`,
    'if [ -S "$d/sock" ] && [ -O "$d/token" ] && [ -O "$d/state.json" ] && IFS= read -r t < "$d/token" && IFS= read -r s < "$d/state.json"; then p=${s#*\\"pid\\":}; p=${p%%[!0-9]*}; if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then printf "EB-DAEMON %s %s\\n" "$t" "$s"; IFS= read -r a || exit 0; [ "$a" = relay ] || exit 0; fi; fi',
  ];
}

/**
 * The command line ssh hands to the remote login shell. `fast`: look for a running daemon first
 * (fastPathSh) — only where the client can reach it through a shared connection.
 */
export function remoteCommand(versionKey: string, relayArgs: string[] = [], fast = false): string {
  for (const a of [versionKey, ...relayArgs])
    if (!/^[\w.=:/-]+$/.test(a)) throw new Error(`unsafe argument for the remote command: ${JSON.stringify(a)}`);
  const js = Buffer.from(BOOTSTRAP_JS).toString('base64');
  const script = [
    ...(fast ? fastPathSh(versionKey) : []),
    'u=$(uname -sm 2>/dev/null)',
    'n=$(command -v node 2>/dev/null)',
    'v=',
    'if [ -n "$n" ]; then v=$("$n" --version 2>/dev/null); fi',
    'printf "EB-PROBE %s|%s|%s\\n" "$u" "$n" "$v"',
    'case "$u" in Linux*|Darwin*) ;; *) exit 0;; esac',
    'case "$v" in v[2-9][0-9].*|v[1-9][0-9][0-9].*) ;; *) exit 0;; esac',
    `exec "$n" -e "eval(Buffer.from(process.argv[1],\\"base64\\").toString())" ${js} ${versionKey} ${relayArgs.join(' ')}`,
  ].join('; ');
  return `exec /bin/sh -c '${script}'`;
}
