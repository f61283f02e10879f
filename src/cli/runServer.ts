import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makePrivateSubdir, sweepDeadDirs, TOKEN_DIR_PREFIX } from '../util';

/** The exec-server `run --bundled` started for itself: its child, on loopback. */
export interface RunServer {
  url: string;
  token: string;
  pid: number;
  /** Resolves with how the server ended (`killed by SIGKILL`, `exit code 1`) if it ends before `stop()`. */
  died: Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts `exec-bridge serve` (this same script) on loopback port 0 with a random token kept in a
 * 0600 file. It gets its own process group so a Ctrl-C in the terminal reaches only us (we turn it
 * into an interrupt of the command) and not the server.
 */
export async function startRunServer(): Promise<RunServer> {
  const token = randomBytes(32).toString('hex');
  // In our private directory, hidden from every sandbox (with --sandbox-network a command could
  // otherwise read it and start itself unsandboxed), and removed once the server has read it.
  sweepDeadDirs(TOKEN_DIR_PREFIX);
  const dir = makePrivateSubdir(TOKEN_DIR_PREFIX);
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const script = process.argv[1]!;
  // --exit-with-stdin: the pipe closes when we die in any way (even SIGKILL), and the server goes with us.
  const child = spawn(process.execPath, [script, 'serve', '--listen', 'ws://127.0.0.1:0', '--token-file', tokenFile, '--exit-with-stdin'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: true,
  });
  const killNow = () => {
    try {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    } catch {
      // gone
    }
  };
  // Last resort if we exit without running the cleanup (e.g. an uncaught error).
  process.once('exit', killNow);
  let stopping = false;
  const died = new Promise<string>((resolvePromise) =>
    child.once('exit', (code, signal) => {
      if (!stopping) resolvePromise(signal ? `killed by ${signal}` : `exit code ${code}`);
    }),
  );
  const stop = async () => {
    stopping = true;
    process.off('exit', killNow);
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const url = await readUrl(child);
    rmSync(dir, { recursive: true, force: true });
    return { url, token, pid: child.pid!, died, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

function readUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolvePromise, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('the bundled exec-server did not start within 15 s')), 15_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /ws:\/\/[^\s]+/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[0]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the bundled exec-server exited (${code}) before it was ready`));
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
  await exited;
  clearTimeout(timer);
}
