/**
 * Search in executor folders (core/executorSearch.ts) on real servers, ours and `codex exec-server`:
 * ripgrep run on the executor in its read-only sandbox finds a line at its column; without rg,
 * grep does; a bounded search stops the tool; file search lists what Quick Open needs.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecServerClient } from '../../src/client';
import { clientProcesses, ExecutorSearch, type TextMatch } from '../../src/core/executorSearch';
import { startExecServer, type ExecServerProcess, type ServerKind } from '../helpers/servers';

for (const kind of ['ours', 'codex'] as ServerKind[]) {
  describe(`search on the executor (${kind})`, () => {
    let server: ExecServerProcess;
    let client: ExecServerClient;
    let dir: string;
    before(async () => {
      server = await startExecServer(kind);
      client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url: server.url }, keepalive: false });
      dir = fs.mkdtempSync(join(tmpdir(), 'eb-search-'));
      fs.mkdirSync(join(dir, 'src', 'deep'), { recursive: true });
      fs.mkdirSync(join(dir, 'node_modules', 'pkg'), { recursive: true });
      fs.writeFileSync(join(dir, 'src', 'deep', 'café.ts'), 'const a = 1;\n// naïve: findMe here\n');
      fs.writeFileSync(join(dir, 'node_modules', 'pkg', 'x.ts'), 'findMe in a dependency\n');
      fs.writeFileSync(join(dir, 'notes.txt'), 'nothing\n');
      for (let i = 0; i < 40; i++) fs.writeFileSync(join(dir, `many${i}.txt`), 'repeat\nrepeat\n');
    });
    after(async () => {
      client.dispose();
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const search = (tools?: { rg: string; grep: string }) =>
      new ExecutorSearch(
        clientProcesses(async () => client),
        tools,
      );

    for (const tools of [undefined, { rg: 'rg-not-installed-here', grep: 'grep' }]) {
      test(`${tools ? 'grep (no rg)' : 'ripgrep'} finds the line and its column; excludes apply`, async () => {
        const found: TextMatch[] = [];
        const r = await search(tools).findText(
          { pattern: 'FINDME' },
          { folder: dir, excludes: ['**/node_modules'] },
          { maxResults: 100, onMatch: (m) => found.push(m) },
        );
        assert.equal(r.tool, tools ? 'grep' : 'rg');
        assert.deepEqual(found, [
          { path: join(dir, 'src', 'deep', 'café.ts'), line: 1, text: '// naïve: findMe here', ranges: [{ start: 10, end: 16 }] },
        ]);
        if (kind === 'ours') assert.equal(r.sandboxed, true, 'in the read-only sandbox');
      });
    }

    test('a bounded search stops early and says so; nothing found is an empty, honest result', async () => {
      const found: TextMatch[] = [];
      const r = await search().findText(
        { pattern: 'repeat', isCaseSensitive: true },
        { folder: dir },
        { maxResults: 7, onMatch: (m) => found.push(m) },
      );
      assert.equal(found.length, 7);
      assert.equal(r.limitHit, true);
      const none = await search().findText(
        { pattern: 'no such text anywhere' },
        { folder: dir },
        { maxResults: 7, onMatch: () => assert.fail() },
      );
      assert.deepEqual({ count: none.count, limitHit: none.limitHit }, { count: 0, limitHit: false });
      await assert.rejects(
        search().findText({ pattern: '(', isRegExp: true }, { folder: dir }, { maxResults: 7, onMatch: () => undefined }),
        /rg failed on the executor: .*regex/i,
      );
    });

    test('file search lists matching files (Quick Open)', async () => {
      const r = await search().findFiles('deep caf', { folder: dir, excludes: ['**/node_modules'] }, { maxResults: 10 });
      assert.deepEqual(r, { paths: [join(dir, 'src', 'deep', 'café.ts')], limitHit: false });
    });
  });
}
