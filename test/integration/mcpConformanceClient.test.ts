/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, a devDependency) against
 * our client, driven the way a user drives it (mcpConformanceClient.ts: a configuration with an
 * http server → Start → Sign in… → Call Tool). Every client scenario the suite lists, the `auth/*`
 * ones included, must pass. The suite needs a Node newer than 20: it runs on the Node 24 that the
 * VS Code tests install (scripts/codeServer.mjs). No token, secret or authorization code the
 * suite's servers handed out may appear in what our manager logged.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { REPO_ROOT } from '../helpers/servers';

const SUITE = join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const CLIENT = join(__dirname, 'mcpConformanceClient.js');

/** The Node 24 of the VS Code tests (installed from npm once, like they do). */
async function node24(): Promise<string> {
  const lib = (await import(pathToFileURL(join(REPO_ROOT, 'scripts', 'codeServer.mjs')).href)) as {
    ensureNode(version: string): string;
    VSCODE_TARGETS: { newest: { node: string } };
  };
  return join(lib.ensureNode(lib.VSCODE_TARGETS.newest.node), 'bin', 'node');
}

interface Check {
  id: string;
  status: string;
  description?: string;
  errorMessage?: string;
  details?: unknown;
}

interface Outcome {
  scenario: string;
  code: number | null;
  checks: Check[];
  clientOutput: string;
  output: string;
}

function run(node: string, scenario: string, results: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const out = join(results, scenario.replace(/\//g, '_'));
    const p = spawn(
      node,
      [SUITE, 'client', '--command', `${process.execPath} ${CLIENT}`, '--scenario', scenario, '--timeout', '60000', '-o', out],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_NO_WARNINGS: '1' } },
    );
    let output = '';
    p.stdout.on('data', (d: Buffer) => (output += d.toString()));
    p.stderr.on('data', (d: Buffer) => (output += d.toString()));
    p.on('close', (code) => {
      const dirs = findFiles(out, 'checks.json');
      const dir = dirs[0] ? join(dirs[0], '..') : undefined;
      const read = (f: string) => (dir ? readFileSync(join(dir, f), 'utf8') : '');
      resolve({
        scenario,
        code,
        checks: dir ? (JSON.parse(read('checks.json')) as Check[]) : [],
        clientOutput: read('stdout.txt') + read('stderr.txt'),
        output,
      });
    });
  });
}

function findFiles(dir: string, name: string): string[] {
  let out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out = out.concat(findFiles(p, name));
    else if (e.name === name) out.push(p);
  }
  return out;
}

/** Every secret the suite's servers sent or accepted, from the requests and responses it recorded. */
function secretsIn(checks: Check[]): string[] {
  const found = new Set<string>();
  const walk = (v: unknown, key = ''): void => {
    if (typeof v === 'string') {
      if (/^(access_token|refresh_token|id_token|client_secret|code|code_verifier|assertion|client_assertion|subject_token)$/.test(key))
        found.add(v);
      else if (key.toLowerCase() === 'authorization' && /^(Bearer|Basic) /.test(v)) found.add(v.split(' ')[1]!);
      return;
    }
    if (Array.isArray(v)) v.forEach((x) => walk(x, key));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  walk(checks);
  return [...found].filter((s) => s.length >= 8);
}

describe('MCP conformance suite: client scenarios', () => {
  let node = '';
  let scenarios: string[] = [];
  let results = '';
  before(async () => {
    node = await node24();
    results = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
    const list = spawnSync(node, [SUITE, 'list'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(list.status, 0, list.stderr);
    const section = list.stdout.split(/Client scenarios[^\n]*\n/)[1] ?? '';
    scenarios = [...section.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]!);
  });
  after(() => rmSync(results, { recursive: true, force: true }));

  test('every client scenario passes, the auth/* ones included, and no secret is logged', async () => {
    assert.ok(scenarios.length >= 26, `the suite lists ${scenarios.length} client scenarios: ${scenarios.join(', ')}`);
    assert.ok(scenarios.filter((s) => s.startsWith('auth/')).length >= 22, 'auth scenarios are listed');
    const outcomes: Outcome[] = [];
    // Two at a time: each is a test server, our client and its manager (a 2-core machine).
    const queue = [...scenarios];
    await Promise.all(
      [0, 1].map(async () => {
        for (let s = queue.shift(); s !== undefined; s = queue.shift()) outcomes.push(await run(node, s, results));
      }),
    );
    const failed = outcomes.filter((o) => o.code !== 0);
    const report = failed.map(
      (o) =>
        `${o.scenario} (exit ${o.code}): ${o.checks
          .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
          .map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? ''}`)
          .join('; ')}\n${o.output.slice(-1500)}`,
    );
    console.log(`conformance: ${outcomes.length - failed.length} of ${outcomes.length} client scenarios passed`);
    assert.deepEqual(report, [], report.join('\n\n'));
    assert.ok(outcomes.filter((o) => secretsIn(o.checks).length > 0).length >= 18, 'the tokens the suite issued were found to look for');
    for (const o of outcomes) {
      assert.ok(o.checks.length > 0, `${o.scenario}: the suite recorded checks`);
      for (const secret of secretsIn(o.checks))
        assert.ok(!o.clientOutput.includes(secret), `${o.scenario}: a secret the suite handed out appears in our log`);
    }
    const signedIn = outcomes.filter((o) => /signed in/.test(o.clientOutput)).map((o) => o.scenario);
    assert.ok(signedIn.length >= 18, `sign-ins happened through the manager: ${signedIn.join(', ')}`);
  });
});
