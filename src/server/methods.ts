import type { Router } from '../rpc/router';
import type { RequestContext } from './connection';
import type { SessionResource } from './session';

/** fs/* and http/* registrations added to the server's router. */
export const serverMethodRegistrations: Array<(router: Router<RequestContext>) => void> = [];

export function sessionResources(): SessionResource[] {
  return [];
}
