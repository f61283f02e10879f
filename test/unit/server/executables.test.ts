import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, test } from 'node:test';
import { findOnPath, findSystemTool, isExecutableFile, SYSTEM_DIRS } from '../../../src/server/executables';

const base = mkdtempSync(join(tmpdir(), 'eb-exe-'));
after(() => rmSync(base, { recursive: true, force: true }));

function dirWith(name: string, files: Record<string, number | 'dir'>): string {
  const dir = join(base, name);
  mkdirSync(dir);
  for (const [file, mode] of Object.entries(files)) {
    if (mode === 'dir') mkdirSync(join(dir, file));
    else {
      writeFileSync(join(dir, file), '#!/bin/sh\n');
      chmodSync(join(dir, file), mode);
    }
  }
  return dir;
}

const plain = dirWith('plain', { tool: 0o644 });
const asDir = dirWith('asDir', { tool: 'dir' });
const first = dirWith('first', { tool: 0o755 });
const second = dirWith('second', { tool: 0o755 });

test('isExecutableFile: a regular file with the x bit, nothing else', () => {
  assert.equal(isExecutableFile(join(first, 'tool')), true);
  assert.equal(isExecutableFile(join(plain, 'tool')), false); // root too: X_OK needs some x bit
  assert.equal(isExecutableFile(join(asDir, 'tool')), false);
  assert.equal(isExecutableFile(join(base, 'missing')), false);
});

test('findOnPath: the first executable file, in PATH order, skipping empty entries, non-executables and directories', () => {
  assert.equal(findOnPath('tool', ['', plain, asDir, first, second].join(':')), join(first, 'tool'));
  assert.equal(findOnPath('tool', [second, first].join(':')), join(second, 'tool'));
  assert.equal(findOnPath('tool', [plain, asDir].join(':')), undefined);
});

test('findOnPath: relative entries only when asked (they resolve against our cwd)', () => {
  const rel = relative(process.cwd(), first);
  assert.equal(findOnPath('tool', rel), undefined);
  assert.equal(findOnPath('tool', rel, { relativeDirs: true }), join(rel, 'tool'));
});

test('findOnPath: an unset PATH means the default search path', () => {
  assert.equal(
    findOnPath('sh', undefined),
    ['/usr/local/bin/sh', '/usr/bin/sh', '/bin/sh'].find((p) => isExecutableFile(p)),
  );
});

test('findSystemTool: the first executable in fixed absolute folders, whatever PATH says', () => {
  assert.equal(findSystemTool('tool', [plain, asDir, first, second]), join(first, 'tool'));
  assert.equal(findSystemTool('tool', [plain]), undefined);
  assert.ok(SYSTEM_DIRS.every((d) => d.startsWith('/')));
  const saved = process.env.PATH;
  process.env.PATH = `${second}:${saved ?? ''}`;
  try {
    assert.equal(findSystemTool('tool'), undefined);
  } finally {
    process.env.PATH = saved;
  }
});
