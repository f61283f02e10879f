import { connect } from 'node:net';
import { MCP_PROXY_USAGE } from './usage';

/** `mcp-proxy SOCKET SERVER`: a byte pipe between our stdio and the extension's MCP gateway. */
export async function mcpProxyCommand(args: string[]): Promise<number> {
  const [socketPath, server] = args;
  if (!socketPath || !server || args.length !== 2) {
    process.stderr.write(`${MCP_PROXY_USAGE}\n`);
    return 2;
  }
  return new Promise<number>((resolve) => {
    const socket = connect(socketPath);
    let ready = false;
    let head = Buffer.alloc(0);
    const say = (line: string) => process.stderr.write(`exec-bridge mcp-proxy: ${line}\n`);
    socket.on('error', (e) => {
      say(ready ? `lost the extension: ${e.message}` : `cannot reach Exec Bridge (is the window open?): ${e.message}`);
      resolve(1);
    });
    socket.on('connect', () => socket.write(`${JSON.stringify({ execBridgeMcpProxy: 1, server })}\n`));
    const onHead = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(10);
      if (nl < 0) return;
      socket.off('data', onHead);
      let answer: { execBridgeMcpProxyReady?: number; execBridgeMcpProxyError?: string } = {};
      try {
        answer = JSON.parse(head.subarray(0, nl).toString('utf8')) as typeof answer;
      } catch {
        // not ours
      }
      if (answer.execBridgeMcpProxyReady !== 1) {
        say(answer.execBridgeMcpProxyError ?? 'unexpected answer from the extension');
        socket.destroy();
        resolve(1);
        return;
      }
      ready = true;
      const rest = head.subarray(nl + 1);
      if (rest.length > 0) process.stdout.write(rest);
      socket.pipe(process.stdout);
      process.stdin.pipe(socket);
    };
    socket.on('data', onHead);
    // The extension closed the session (the server stopped there): so do we.
    socket.on('close', () => resolve(ready ? 0 : 1));
    process.stdin.on('end', () => socket.end());
  });
}
