import type { Endpoint } from '../client';
import { redactUrl, type ExecutorConfig } from './executorConfig';

/** Where a WebSocket or stdio executor's client connects (`bundled` and `ssh` connect through their connectors). */
export async function executorEndpoint(
  c: ExecutorConfig,
  getToken: (secretName: string) => Promise<string | undefined>,
): Promise<Endpoint> {
  switch (c.kind) {
    case 'bundled':
      throw new Error('the bundled executor connects through its connector');
    case 'websocket': {
      const token = await getToken(c.tokenSecret);
      return { kind: 'websocket', url: c.url, ...(token ? { token } : {}) };
    }
    case 'stdio':
      return { kind: 'stdio', command: c.command[0]!, args: c.command.slice(1) };
    case 'ssh':
      throw new Error('an SSH executor connects through its connector');
  }
}

/** The endpoint as the log shows it (a URL's credentials left out). */
export function describeEndpoint(e: Endpoint): string {
  return e.kind === 'websocket' ? `${redactUrl(e.url)}${e.token ? ', with token' : ''}` : `stdio: ${e.command}`;
}
