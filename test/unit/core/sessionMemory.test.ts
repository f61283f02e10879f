/** `SessionMemory`: what a window remembers of its sessions, over a Memento stand-in (a Map, JSON-cloned as VS Code stores it). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SESSION_MEMORY_KEY, SessionMemory } from '../../../src/core/sessionMemory';
import { MapMemento } from '../../helpers/mapMemento';

const clock = { now: () => 1000, setTimeout: () => 0, clearTimeout: () => undefined } as never;
const shell = {
  title: 'bash · bundled',
  kind: 'shell' as const,
  commandLine: '/bin/bash',
  cwd: '/w',
  sandboxed: true,
  sandboxLabel: 'workspace-write',
};

describe('SessionMemory', () => {
  test('a session, its processes and which are terminals survive a new instance (a reload)', async () => {
    const memento = new MapMemento();
    const a = new SessionMemory(memento, clock);
    a.session('bundled', 'cfg', 's-1');
    a.tracked('bundled', { processId: 'p1', tty: true, stdinWritable: true });
    a.tracked('bundled', { processId: 'p2', tty: false, stdinWritable: true });
    a.tracked('bundled', { processId: 'p2', tty: false, stdinWritable: true });
    a.describe('bundled', 'p1', shell);
    await a.flush();
    const b = new SessionMemory(memento, clock);
    assert.deepEqual(b.recall('bundled', 'cfg'), {
      configKey: 'cfg',
      sessionId: 's-1',
      savedAt: 1000,
      processes: [
        { processId: 'p1', tty: true, stdinWritable: true, terminal: shell },
        { processId: 'p2', tty: false, stdinWritable: true },
      ],
    });
  });

  test('another configuration of the executor is another executor: nothing to recall', () => {
    const memento = new MapMemento();
    const a = new SessionMemory(memento, clock);
    a.session('devbox', '{"url":"ws://a"}', 's-1');
    assert.equal(a.recall('devbox', '{"url":"ws://b"}'), undefined);
    assert.equal(a.recall('other', '{"url":"ws://a"}'), undefined);
  });

  test('the same session keeps its processes; a new one starts empty; a finished process is dropped', async () => {
    const memento = new MapMemento();
    const a = new SessionMemory(memento, clock);
    a.session('bundled', 'cfg', 's-1');
    a.tracked('bundled', { processId: 'p1', tty: false, stdinWritable: false });
    a.tracked('bundled', { processId: 'p2', tty: false, stdinWritable: false });
    a.session('bundled', 'cfg', 's-1');
    assert.equal(a.recall('bundled', 'cfg')?.processes.length, 2, 'resumed: kept');
    a.untracked('bundled', 'p1');
    assert.deepEqual(
      a.recall('bundled', 'cfg')?.processes.map((p) => p.processId),
      ['p2'],
    );
    a.session('bundled', 'cfg', 's-2');
    assert.deepEqual(a.recall('bundled', 'cfg')?.processes, [], 'a new session');
    a.forget('bundled');
    await a.flush();
    assert.equal(new SessionMemory(memento, clock).recall('bundled', 'cfg'), undefined);
  });

  test('two workspaces (two mementos) never see each other', () => {
    const one = new SessionMemory(new MapMemento(), clock);
    const two = new SessionMemory(new MapMemento(), clock);
    one.session('bundled', 'cfg', 's-1');
    one.tracked('bundled', { processId: 'p1', tty: true, stdinWritable: true });
    assert.equal(two.recall('bundled', 'cfg'), undefined);
  });

  test('an unreadable stored value (another layout) is dropped, not thrown', () => {
    const memento = new MapMemento();
    memento.values.set(SESSION_MEMORY_KEY, { bundled: { sessionId: 42 } });
    assert.equal(new SessionMemory(memento, clock).recall('bundled', 'cfg'), undefined);
    memento.values.set(SESSION_MEMORY_KEY, 'garbage');
    assert.equal(new SessionMemory(memento, clock).recall('bundled', 'cfg'), undefined);
  });

  test('every change is written through at once, in order (a crash right after still finds it)', async () => {
    const memento = new MapMemento();
    const a = new SessionMemory(memento, clock);
    a.session('bundled', 'cfg', 's-1');
    a.tracked('bundled', { processId: 'p1', tty: false, stdinWritable: false });
    a.untracked('bundled', 'p1');
    a.tracked('bundled', { processId: 'p3', tty: false, stdinWritable: false });
    await a.flush();
    assert.equal(memento.writes, 4);
    assert.deepEqual(
      new SessionMemory(memento, clock).recall('bundled', 'cfg')?.processes.map((p) => p.processId),
      ['p3'],
    );
  });
});
