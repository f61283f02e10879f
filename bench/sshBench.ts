// SSH executor figures (issue 11), run by bench/ssh.mjs: a real sshd on 127.0.0.1 (the tests'
// helper), first connect with the upload into an empty remote home, connect with the bundle
// installed (new ssh + relay + daemon already up), and cut → output flowing again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecServerClient } from '../src/client';
import { sshConnector } from '../src/client/sshConnector';
import { FaultProxy } from '../test/helpers/faultProxy';
import { copyBundle, NODE_PTY_DIR, startSshd } from '../test/helpers/sshd';

const REPS = Number(process.env.REPS ?? 5);

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)}, n=${s.length})`;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'eb-ssh-bench-'));
  const cli = copyBundle(join(work, 'bundle'));
  const first: number[] = [];
  const again: number[] = [];
  const reconnect: number[] = [];
  let bytes = 0;
  for (let r = 0; r < REPS; r++) {
    // A fresh sshd (and so an empty remote home) per rep: every first connect uploads.
    const sshd = await startSshd();
    const proxy = await FaultProxy.start(sshd.port);
    try {
      const mk = () =>
        sshConnector({
          target: `root@127.0.0.1:${proxy.port}`,
          sshOptions: sshd.clientOptions,
          cliPath: cli,
          nodePtyDir: NODE_PTY_DIR,
          progress: (p) => {
            if (p.step === 'installing') bytes = p.bytes;
          },
        });
      let t0 = performance.now();
      const a = await ExecServerClient.connect({ connector: mk(), attemptTimeoutMs: 60_000 });
      first.push(performance.now() - t0);
      a.dispose();
      t0 = performance.now();
      const client = await ExecServerClient.connect({ connector: mk(), keepalive: false, attemptTimeoutMs: 60_000 });
      again.push(performance.now() - t0);
      // A command printing a line every 10 ms; after the cut, time until a new line arrives.
      const h = await client.startProcess({
        argv: ['sh', '-c', 'i=0; while [ $i -lt 3000 ]; do echo $i; i=$((i+1)); sleep 0.01; done'],
        cwd: '/tmp',
      });
      let lastChunk = 0;
      let waiting: (() => void) | undefined;
      h.onEvent((e) => {
        if (e.type === 'output') {
          lastChunk = performance.now();
          waiting?.();
        }
      });
      await new Promise<void>((r) => (waiting = r));
      const cutAt = performance.now();
      proxy.cut();
      await new Promise<void>((resolve) => {
        waiting = () => {
          if (lastChunk > cutAt && client.state.kind === 'connected') resolve();
        };
      });
      reconnect.push(performance.now() - cutAt);
      await h.terminate();
      client.dispose();
    } finally {
      await proxy.close();
      await sshd.stop();
    }
  }
  rmSync(work, { recursive: true, force: true });
  console.log(`upload: ${(bytes / 1e6).toFixed(2)} MB`);
  console.log(`first connect (probe + upload + install + daemon start + initialize): ${stats(first)}`);
  console.log(`connect, bundle installed and daemon up (new ssh + relay + initialize): ${stats(again)}`);
  console.log(`TCP cut under ssh -> output flowing again (new ssh + relay + resume): ${stats(reconnect)}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
