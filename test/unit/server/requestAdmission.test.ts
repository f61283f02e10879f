import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission } from '../../../src/server/requestAdmission';
import { collectTree, parseStat, type ProcInfo } from '../../../src/server/processTree';

const turn = () => new Promise((r) => setImmediate(r));

test('admission: small requests run at once; bulky ones a few at a time, none while congested', async () => {
  let congested = false;
  const a = new Admission(() => congested, { files: 2 }, { 'fs/readFile': 'files' });
  assert.equal(a.enter('environment/status'), undefined);
  const started: number[] = [];
  const releases: Array<() => void> = [];
  for (let i = 0; i < 5; i++) void a.enter('fs/readFile')!.then((release) => (started.push(i), releases.push(release)));
  await turn();
  assert.deepEqual(started, [0, 1]);
  congested = true;
  releases.shift()!();
  await turn();
  assert.deepEqual(started, [0, 1], 'nothing bulky starts while congested');
  congested = false;
  a.pump(); // the connection drained
  await turn();
  assert.deepEqual(started, [0, 1, 2]);
  releases.shift()!();
  releases.shift()!();
  await turn();
  await turn();
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  assert.equal(a.waitingCount, 0);
});

test('admission: a closed connection lets every waiter go', async () => {
  const a = new Admission(() => true, { files: 1 }, { 'fs/readFile': 'files' });
  let ran = 0;
  for (let i = 0; i < 3; i++) void a.enter('fs/readFile')!.then(() => ran++);
  await turn();
  assert.equal(ran, 0);
  a.close();
  await turn();
  assert.equal(ran, 3);
});

test('parseStat: comm with spaces and parens; zombie state', () => {
  assert.deepEqual(parseStat(42, '42 (a) b) (c) S 1 42 42 0 -1'), { pid: 42, ppid: 1, pgid: 42, sid: 42, zombie: false });
  assert.equal(parseStat(7, '7 (sh) Z 3 3 3 0')!.zombie, true);
  assert.equal(parseStat(7, 'garbage'), undefined);
});

test('collectTree: group, session and parent links; a setsid grandchild through its parent; never ourselves', () => {
  const p = (pid: number, ppid: number, pgid: number, sid: number): ProcInfo => ({ pid, ppid, pgid, sid, zombie: false });
  const procs = [
    p(100, 1, 100, 100), // root
    p(101, 100, 100, 100), // child
    p(102, 101, 102, 102), // setsid grandchild: found by its parent link
    p(103, 1, 100, 100), // nohup child reparented to init: found by group
    p(104, 102, 102, 102), // its child
    p(200, 1, 200, 200), // unrelated
    p(process.pid, 100, 100, 100),
  ];
  assert.deepEqual(collectTree(100, procs).sort(), [100, 101, 102, 103, 104]);
});
