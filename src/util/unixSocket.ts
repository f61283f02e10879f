import { connect } from 'node:net';

/** Whether something accepts connections on the unix socket `path` (a stale socket file does not). */
export function socketAccepts(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
