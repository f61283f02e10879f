/**
 * Our ExecServerClient's own figures (issues 3 and 16), run as a child process of bench/client.mjs
 * and bench/run.mjs so its CPU and peak RSS are its own:
 *   stream <url> [base64]   256 MiB of stdout through the client: wall, client CPU (user+sys), peak
 *                           RSS; binary output frames unless `base64` (a server without them ignores the ask).
 *   readfile <url> <path>   `readFile` of a whole file: wall, client CPU, byte count.
 *   recovery <url>  a ticking process behind a fault proxy: time from a cut (server reachable at
 *                   once) and from the end of a 500 ms black-hole until output flows again.
 * Prints one JSON line.
 */
import { ExecServerClient } from '../src/client';
import { FaultProxy } from '../test/helpers/faultProxy';

const STREAM_BYTES = 256 * 1024 * 1024;

async function stream(url: string, base64: boolean): Promise<object> {
  const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url }, clientName: 'bench', binaryOutput: !base64 });
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const proc = await client.startProcess({ argv: ['head', '-c', String(STREAM_BYTES), '/dev/zero'], cwd: '/tmp', tty: false });
  let bytes = 0;
  proc.onEvent((e) => {
    if (e.type === 'output') bytes += e.data.length;
  });
  await proc.completion;
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  client.dispose();
  if (bytes !== STREAM_BYTES) throw new Error(`got ${bytes} bytes, expected ${STREAM_BYTES}`);
  return {
    wallS,
    mibPerS: STREAM_BYTES / 1024 / 1024 / wallS,
    cpuS: (cpu.user + cpu.system) / 1e6,
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

async function recovery(url: string): Promise<object> {
  const proxy = await FaultProxy.forUrl(url);
  const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url: proxy.url }, clientName: 'bench' });
  const proc = await client.startProcess({
    argv: ['bash', '-c', 'for i in $(seq 1 20000); do echo tick$i; sleep 0.002; done'],
    cwd: '/tmp',
    tty: false,
  });
  let lastOutputAt = 0;
  let text = '';
  proc.onEvent((e) => {
    if (e.type === 'output') {
      lastOutputAt = performance.now();
      text += e.data.toString();
    }
  });
  const nextOutputAfter = async (t: number, limitMs: number): Promise<number> => {
    const end = performance.now() + limitMs;
    while (lastOutputAt <= t) {
      if (performance.now() > end) throw new Error('output did not resume');
      await new Promise((r) => setTimeout(r, 1));
    }
    return lastOutputAt - t;
  };
  await nextOutputAfter(0, 10_000);
  const afterCut: number[] = [];
  const afterHeal: number[] = [];
  for (let i = 0; i < 8; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const t = performance.now();
    proxy.cut();
    afterCut.push(await nextOutputAfter(t, 10_000));
  }
  for (let i = 0; i < 4; i++) {
    await new Promise((r) => setTimeout(r, 100));
    proxy.blackhole();
    await new Promise((r) => setTimeout(r, 500));
    const t = performance.now();
    proxy.heal();
    afterHeal.push(await nextOutputAfter(t, 10_000));
  }
  await proc.terminate();
  await proc.completion.catch(() => undefined);
  client.dispose();
  await proxy.close();
  // Output must be exact across all of it: consecutive ticks from 1, none lost or repeated.
  const ticks = text.trim().split('\n');
  ticks.forEach((line, i) => {
    if (line !== `tick${i + 1}`) throw new Error(`output not exact at line ${i + 1}: ${line}`);
  });
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    cutMedianMs: med(afterCut),
    cutMaxMs: Math.max(...afterCut),
    healMedianMs: med(afterHeal),
    healMaxMs: Math.max(...afterHeal),
    exactLines: ticks.length,
  };
}

async function readFile(url: string, path: string): Promise<object> {
  const client = await ExecServerClient.connect({ endpoint: { kind: 'websocket', url }, clientName: 'bench' });
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const data = await client.readFile(path);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  client.dispose();
  return { wallS, bytes: data.length, cpuS: (cpu.user + cpu.system) / 1e6, maxRssMiB: process.resourceUsage().maxRSS / 1024 };
}

const [mode, url, extra] = process.argv.slice(2);
(mode === 'stream' ? stream(url!, extra === 'base64') : mode === 'readfile' ? readFile(url!, extra!) : recovery(url!)).then(
  (r) => {
    process.stdout.write(JSON.stringify(r) + '\n');
    process.exit(0);
  },
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
