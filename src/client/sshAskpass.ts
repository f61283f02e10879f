import { randomBytes, timingSafeEqual } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { makePrivateSubdir, sweepDeadDirs } from '../util';

/*
 * ssh's password and passphrase prompts, forwarded to the editor. For each ssh process we start a
 * unix socket in a fresh subdirectory of the private directory (never visible in a sandbox) and
 * point ssh at a helper (`SSH_ASKPASS` + `SSH_ASKPASS_REQUIRE=force`): ssh runs it with the prompt
 * text, the helper (`exec-bridge askpass`, src/cli/askpass.ts) sends `{secret, prompt, kind}` as
 * one JSON line and prints the answer it gets back. The secret is per ssh process and travels in
 * the environment only, never on a command line. Host-key confirmations ("Are you sure you want to
 * continue connecting (yes/no…)?") are answered "no" here without asking: an unknown key goes
 * through Check Host Key… instead, never through a typed "yes".
 */

/** `kind` is ssh's SSH_ASKPASS_PROMPT: '' for a secret, 'confirm' for yes/no, 'none' for a notice. */
export interface AskpassRequest {
  prompt: string;
  kind: '' | 'confirm' | 'none';
}

/** Resolves the answer, or undefined when the user cancelled. `signal` aborts when ssh no longer waits. */
export type AskpassHandler = (request: AskpassRequest, signal: AbortSignal) => Promise<string | undefined>;

export const ASKPASS_DIR_PREFIX = 'askpass-';
export const ASKPASS_SOCKET_ENV = 'EXEC_BRIDGE_ASKPASS_SOCKET';
export const ASKPASS_SECRET_ENV = 'EXEC_BRIDGE_ASKPASS_SECRET';

/** The line the helper sends and the one it gets back. */
export interface AskpassHello {
  secret: string;
  prompt: string;
  kind: string;
}
export type AskpassReply = { answer: string } | { cancel: true };

const HOST_KEY_PROMPT = /continue connecting \(yes\/no/i;

export interface AskpassSession {
  /** The socket's path (tests attack it). */
  readonly socketPath: string;
  /** What ssh's environment needs (SSH_ASKPASS and friends). */
  readonly env: Record<string, string>;
  /** Prompts shown to the user so far. */
  readonly prompts: number;
  /** Whether a host-key confirmation was refused (ssh then says "Host key verification failed"). */
  readonly refusedHostKey: boolean;
  /** Ends a pending prompt and removes the socket and its directory. */
  close(): void;
}

export interface AskpassOptions {
  /** `dist/cli.js`, which has the `askpass` command. */
  cliPath: string;
  /** The Node that runs it (default: this process's; an Electron host runs as Node). */
  nodePath?: string;
  handler: AskpassHandler;
  /** Called when the user cancels a prompt (the connector ends the attempt). */
  onCancel(prompt: string): void;
  log?(line: string): void;
  env?: NodeJS.ProcessEnv;
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A listening askpass socket for one ssh process. */
export async function startAskpass(options: AskpassOptions): Promise<AskpassSession> {
  sweepDeadDirs(ASKPASS_DIR_PREFIX, options.env);
  const dir = makePrivateSubdir(ASKPASS_DIR_PREFIX, options.env);
  const socketPath = join(dir, 's');
  const helper = join(dir, 'askpass');
  const secret = randomBytes(32).toString('hex');
  const node = options.nodePath ?? process.execPath;
  writeFileSync(helper, `#!/bin/sh\nELECTRON_RUN_AS_NODE=1 exec ${sq(node)} ${sq(options.cliPath)} askpass "$@"\n`, { mode: 0o700 });
  const abort = new AbortController();
  let prompts = 0;
  let refusedHostKey = false;
  let closed = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    // One line, soon: anything else is not our helper.
    socket.setTimeout(5_000, () => socket.destroy());
    let buf = '';
    socket.setEncoding('utf8');
    const onHello = (line: string): void => {
      let hello: AskpassHello;
      try {
        hello = JSON.parse(line) as AskpassHello;
      } catch {
        socket.destroy();
        return;
      }
      if (!secretMatches(hello.secret, secret) || typeof hello.prompt !== 'string') {
        options.log?.('askpass: a connection without the secret was refused');
        socket.destroy();
        return;
      }
      const reply = (r: AskpassReply) => socket.end(JSON.stringify(r) + '\n');
      const prompt = hello.prompt.trim();
      if (HOST_KEY_PROMPT.test(prompt)) {
        refusedHostKey = true;
        options.log?.('askpass: a host-key confirmation was refused (Check Host Key… decides)');
        reply({ answer: 'no' });
        return;
      }
      const kind = hello.kind === 'confirm' || hello.kind === 'none' ? hello.kind : '';
      prompts++;
      options.log?.(`askpass: ${kind ? kind + ' ' : ''}prompt "${prompt}"`);
      options.handler({ prompt, kind }, abort.signal).then(
        (answer) => {
          if (answer === undefined) {
            reply({ cancel: true });
            if (!closed && kind !== 'none') options.onCancel(prompt);
          } else reply({ answer });
        },
        () => reply({ cancel: true }),
      );
    };
    socket.on('data', (d: string) => {
      buf += d;
      if (buf.length > 65_536) socket.destroy();
      const nl = buf.indexOf('\n');
      if (nl < 0 || socket.destroyed) return;
      socket.removeAllListeners('data');
      socket.setTimeout(0);
      onHello(buf.slice(0, nl));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    socketPath,
    env: {
      SSH_ASKPASS: helper,
      SSH_ASKPASS_REQUIRE: 'force',
      [ASKPASS_SOCKET_ENV]: socketPath,
      [ASKPASS_SECRET_ENV]: secret,
    },
    get prompts() {
      return prompts;
    },
    get refusedHostKey() {
      return refusedHostKey;
    },
    close() {
      if (closed) return;
      closed = true;
      abort.abort(new Error('ssh no longer waits for an answer'));
      server.close();
      for (const s of sockets) s.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function secretMatches(given: unknown, secret: string): boolean {
  if (typeof given !== 'string' || given.length !== secret.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(secret));
}
