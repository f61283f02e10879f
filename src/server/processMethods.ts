import type { Router } from '../rpc';
import type { RequestContext } from './connection';

/** process/* handlers: thin adapters from parsed params to the session. */
export function registerProcessMethods(router: Router<RequestContext>): void {
  router
    .on('process/start', (p, ctx) => ctx.session.startProcess(p))
    .on('process/read', (p, ctx) =>
      ctx.session.read(p.processId, p.afterSeq ?? 0, p.maxBytes ?? undefined, p.waitMs ?? 0, ctx.outputSpool, p.execBridgeSpoolMaxBytes),
    )
    .on('process/write', async (p, ctx) => ({ status: await ctx.session.write(p.processId, Buffer.from(p.chunk, 'base64'), p.writeId) }))
    .on('process/signal', (p, ctx) => {
      ctx.session.interrupt(p.processId);
      return {};
    })
    .on('process/terminate', (p, ctx) => ({ running: ctx.session.terminate(p.processId) }))
    .on('process/resize', (p, ctx) => {
      ctx.session.resize(p.processId, p.cols, p.rows);
      return {};
    })
    .on('execBridge/terminalModes', (p, ctx) => ctx.session.terminalModes(p.processId, p.afterSeq, p.skipBytes ?? 0))
    .on('process/pause', (p, ctx) => {
      ctx.session.holdOutput(p.processId, true);
      return {};
    })
    .on('process/resume', (p, ctx) => {
      ctx.session.holdOutput(p.processId, false);
      return {};
    })
    .on('process/ack', (p, ctx) => {
      ctx.session.ackOutput(p.processId, p.seq, p.window);
      return {};
    });
}
