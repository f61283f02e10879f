// src/vscode without VS Code: its sources are read as data (parsed with TypeScript), never
// imported, so this stays a plain unit test.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

// Compiled to <outDir>/test/unit/vscode/.
const ROOT = join(__dirname, '..', '..', '..', '..');
const VSCODE_DIR = join(ROOT, 'src', 'vscode');

interface Manifest {
  contributes: { commands: { command: string }[]; menus: Record<string, { command?: string }[]> };
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** The string literals of `export const <name> = [...] as const` in a source file. */
function stringArray(file: string, name: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const decl of statement.declarationList.declarations) {
      if (!ts.isIdentifier(decl.name) || decl.name.text !== name || !decl.initializer) continue;
      const init = ts.isAsExpression(decl.initializer) ? decl.initializer.expression : decl.initializer;
      assert.ok(ts.isArrayLiteralExpression(init), `${name} is an array literal`);
      return init.elements.map((e) => {
        assert.ok(ts.isStringLiteral(e), `every element of ${name} is a string literal`);
        return e.text;
      });
    }
  }
  assert.fail(`${file} declares no ${name}`);
}

test('the command list (the keys of the command table) and package.json contributes.commands are the same set', () => {
  const file = join(VSCODE_DIR, 'commandIds.ts');
  assert.match(readFileSync(file, 'utf8'), /export const COMMAND_PREFIX = 'execBridge\.';/);
  const names = stringArray(file, 'COMMAND_NAMES');
  assert.equal(new Set(names).size, names.length, 'no name twice');
  const ours = names.map((n) => `execBridge.${n}`).sort();
  const declared = manifest.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual(
    ours.filter((id) => !declared.includes(id)),
    [],
    'registered but not declared in package.json',
  );
  assert.deepEqual(
    declared.filter((id) => !ours.includes(id)),
    [],
    'declared in package.json but not in the command table',
  );
});

test('every command a package.json menu shows is a declared command', () => {
  const declared = new Set(manifest.contributes.commands.map((c) => c.command));
  const unknown = Object.entries(manifest.contributes.menus).flatMap(([menu, items]) =>
    items.filter((i) => i.command !== undefined && !declared.has(i.command)).map((i) => `${menu}: ${i.command}`),
  );
  assert.deepEqual(unknown, []);
});

/** Local imports of every module of src/vscode (type-only imports included: a type cycle counts). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const name of readdirSync(VSCODE_DIR).filter((n) => n.endsWith('.ts'))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(VSCODE_DIR, name), 'utf8'), true, true);
    const local = importedFiles.map((f) => f.fileName).filter((f) => f.startsWith('./') && !f.slice(2).includes('/'));
    graph.set(name.replace(/\.ts$/, ''), [...new Set(local.map((f) => f.slice(2)))]);
  }
  return graph;
}

/** One cycle of the graph as a path `a → b → a`, or undefined. */
function findCycle(graph: Map<string, string[]>): string | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node].join(' → ');
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

test('the cycle finder finds a cycle when there is one', () => {
  assert.equal(
    findCycle(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
      ]),
    ),
    'a → b → c → a',
  );
  assert.equal(
    findCycle(
      new Map([
        ['a', ['b', 'c']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    undefined,
  );
});

test('src/vscode has no import cycle (features take the FeatureContext interface, not the Extension class)', () => {
  const graph = importGraph();
  assert.ok(graph.has('extension') && graph.has('context') && graph.has('commands'), 'read src/vscode');
  assert.equal(findCycle(graph), undefined);
  const importsExtension = [...graph].filter(([, deps]) => deps.includes('extension')).map(([name]) => name);
  assert.deepEqual(importsExtension, [], 'nothing imports extension.ts (it is the composition root)');
});

// Issue 24 item 9: README said "Help: Get Started", which no VS Code has.
test('README names only palette commands there are, and "Exec Bridge: Get Started" opens our walkthrough', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  // VS Code's own, as both code-servers (1.100.3, 1.139.1) title them (test/vscode/suite/walkthrough.test.ts runs them).
  const vscodeOwn = ['Help: Welcome', 'Welcome: Open Walkthrough…'];
  for (const m of readme.matchAll(/\*\*((?:Help|Welcome|View|File): [^*]+)\*\*/g))
    assert.ok(vscodeOwn.includes(m[1]!), `README names "${m[1]}", which is not ${vscodeOwn.join(' or ')}`);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    publisher: string;
    name: string;
    contributes: { commands: { command: string; title: string; category?: string }[]; walkthroughs: { id: string }[] };
  };
  const ours = pkg.contributes.commands.find((c) => `${c.category}: ${c.title}` === 'Exec Bridge: Get Started');
  assert.equal(ours?.command, 'execBridge.openWalkthrough');
  assert.match(readme, /\*\*Exec Bridge: Get Started\*\*/);
  const id = `${pkg.publisher}.${pkg.name}#${pkg.contributes.walkthroughs[0]!.id}`;
  assert.match(readFileSync(join(VSCODE_DIR, 'commands.ts'), 'utf8'), new RegExp(`WALKTHROUGH_ID = '${id.replace(/\./g, '\\.')}'`));
});
