import net from 'node:net';
import { ASKPASS_SECRET_ENV, ASKPASS_SOCKET_ENV, type AskpassHello, type AskpassReply } from '../client';

/*
 * `exec-bridge askpass PROMPT`: the SSH_ASKPASS helper of an SSH executor (src/client/sshAskpass.ts).
 * ssh runs it with its prompt; it asks the editor over the socket named in the environment,
 * prints the answer on stdout and exits 0, or exits 1 when the user cancelled (ssh then gives up
 * on that prompt). Not meant to be run by hand.
 */
export async function askpassCommand(args: string[]): Promise<number> {
  const socketPath = process.env[ASKPASS_SOCKET_ENV];
  const secret = process.env[ASKPASS_SECRET_ENV];
  if (!socketPath || !secret) {
    process.stderr.write('exec-bridge askpass: only ssh started by Exec Bridge runs this\n');
    return 2;
  }
  const hello: AskpassHello = { secret, prompt: args.join(' '), kind: process.env.SSH_ASKPASS_PROMPT ?? '' };
  const reply = await new Promise<AskpassReply | undefined>((resolve) => {
    const socket = net.connect(socketPath);
    let buf = '';
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write(JSON.stringify(hello) + '\n'));
    socket.on('data', (d: string) => (buf += d));
    socket.once('error', () => resolve(undefined));
    socket.once('close', () => {
      try {
        resolve(JSON.parse(buf) as AskpassReply);
      } catch {
        resolve(undefined);
      }
    });
  });
  if (!reply || !('answer' in reply) || typeof reply.answer !== 'string') return 1;
  process.stdout.write(reply.answer + '\n');
  return 0;
}
