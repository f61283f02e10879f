/**
 * How much output a terminal's flow control (src/core/terminalFlow.ts) has queued during a flood:
 * our client and our server, `head -c FLOOD_MIB MiB /dev/zero` on pipes into a TerminalFlow whose
 * "terminal" answers each status request once it has "parsed" what came before it at RATE
 * characters/s. Prints one JSON line: the flow's peak queue, the most that arrived after one
 * `process/pause` before the next resume, and this process's peak RSS growth (bench/RESULTS.md,
 * "Floods into a terminal"). MODE=credit (the default): the process under a credit window of
 * CREDIT_KIB (512) KiB, output queued raw and acknowledged as the "terminal" is given it (what
 * terminals do); MODE=pause: pause/resume around the queue's limits (the earlier way). Run (KIND=codex
 * for codex's server, which has neither):
 *   npx esbuild bench/terminalFloodQueue.ts --bundle --platform=node --external:node-pty --external:ws \
 *     --outfile=bench/out/q/terminalFloodQueue.js && FLOOD_MIB=200 RATE=20e6 node bench/out/q/terminalFloodQueue.js
 */
import { ExecServerClient, websocketConnector } from '../src/client';
import { TerminalFlow, STATUS_REQUEST, STATUS_REPLY } from '../src/core/terminalFlow';
import { startExecServer } from '../test/helpers/servers';

const MiB = 1024 * 1024;
const TOTAL = Number(process.env.FLOOD_MIB ?? 200) * MiB;
const RATE = Number(process.env.RATE ?? 20e6);
const MODE = process.env.MODE ?? 'credit';
const CREDIT = Number(process.env.CREDIT_KIB ?? 512) * 1024;

async function main(): Promise<void> {
  const server = await startExecServer((process.env.KIND as 'ours' | 'codex') ?? 'ours');
  const client = await ExecServerClient.connect({ connector: websocketConnector(server.url) });
  const h = await client.startProcess({
    argv: ['head', '-c', String(TOTAL), '/dev/zero'],
    cwd: '/tmp',
    env: { PATH: '/usr/bin:/bin' },
    tty: false,
    ...(MODE === 'credit' ? { creditWindow: CREDIT } : {}),
  });
  let busyUntil = Date.now();
  let maxQueue = 0,
    maxRss = 0,
    pauses = 0,
    sincePause = -1,
    maxAfterPause = 0;
  const rss0 = process.memoryUsage().rss;
  const flow: TerminalFlow = new TerminalFlow(
    {
      write(text) {
        busyUntil = Math.max(busyUntil, Date.now()) + (text.length / RATE) * 1000;
        if (text.includes(STATUS_REQUEST)) setTimeout(() => flow.input(STATUS_REPLY), Math.max(0, busyUntil - Date.now()));
      },
      hold(p) {
        if (p) {
          pauses++;
          sincePause = 0;
          h.pauseOutput();
        } else {
          sincePause = -1;
          h.resumeOutput();
        }
      },
      skipped: (n) => `[${n} skipped]`,
      decode: (_raw, bytes) => (bytes ? bytes.toString('latin1') : ''),
      consumed: (n) => h.outputConsumed(n),
    },
    h.creditWindow !== undefined ? 'credit' : h.canPause,
  );
  flow.start();
  const t0 = Date.now();
  h.onEvent((e) => {
    if (e.type === 'output') {
      if (sincePause >= 0) {
        sincePause += e.data.length;
        maxAfterPause = Math.max(maxAfterPause, sincePause);
      }
      if (h.creditWindow !== undefined) flow.pushRaw({ data: e.data, decoder: undefined });
      else flow.push(e.data.toString('latin1'));
      if (flow.backlog > maxQueue) maxQueue = flow.backlog;
    }
  });
  const tick = setInterval(() => (maxRss = Math.max(maxRss, process.memoryUsage().rss)), 50);
  await h.completion;
  clearInterval(tick);
  console.log(
    JSON.stringify({
      kind: process.env.KIND ?? 'ours',
      mode: h.creditWindow !== undefined ? `credit ${CREDIT / 1024} KiB` : h.canPause ? 'pause' : 'none',
      MiB: TOTAL / MiB,
      rateMcps: RATE / 1e6,
      s: (Date.now() - t0) / 1000,
      pauses,
      maxQueueMi: +(maxQueue / MiB).toFixed(3),
      maxAfterPauseMiB: +(maxAfterPause / MiB).toFixed(2),
      rssGrowthMiB: Math.round((maxRss - rss0) / MiB),
    }),
  );
  client.dispose();
  await server.stop();
  process.exit(0);
}
void main();
