import { ErrorCode, describeZodError, requests, type ParsedParamsOf, type RequestMethod, type ResultOf } from '../protocol';
import { RpcError } from './errors';

export type Handler<M extends RequestMethod, Ctx> = (params: ParsedParamsOf<M>, ctx: Ctx) => ResultOf<M> | Promise<ResultOf<M>>;

/**
 * Typed request router for the server: validates params against the method table's schema
 * (-32602 with a serde-style message on failure) and answers unknown methods with -32601.
 */
export class Router<Ctx> {
  private readonly handlers = new Map<string, (params: unknown, ctx: Ctx) => unknown>();

  on<M extends RequestMethod>(method: M, handler: Handler<M, Ctx>): this {
    const schema = requests[method].params;
    this.handlers.set(method, (raw, ctx) => {
      const parsed = schema.safeParse(raw === undefined ? {} : raw, { reportInput: true });
      if (!parsed.success) {
        throw new RpcError(
          ErrorCode.InvalidParams,
          raw === undefined ? `missing params for \`${method}\`` : describeZodError(parsed.error),
        );
      }
      return handler(parsed.data as ParsedParamsOf<M>, ctx);
    });
    return this;
  }

  has(method: string): boolean {
    return this.handlers.has(method);
  }

  dispatch(method: string, params: unknown, ctx: Ctx): unknown {
    const h = this.handlers.get(method);
    if (!h) throw new RpcError(ErrorCode.MethodNotFound, `exec-server stub does not implement \`${method}\` yet`);
    return h(params, ctx);
  }
}
