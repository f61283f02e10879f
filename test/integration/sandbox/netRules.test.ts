/**
 * The managed network sandbox plan for macOS (Seatbelt profiles), planned on any host: a plan with
 * managed network starts its loopback proxy, whose port the profile must name.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { sandboxForPolicy } from '../../../src/protocol/sandbox';
import { SandboxPlanner } from '../../../src/server/sandbox';

describe('managed network sandbox plan', () => {
  test('macOS: the Seatbelt profile allows exactly the port the proxy env names (one snapshot)', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'eb-netmac-'));
    const planner = new SandboxPlanner({ platform: 'darwin' });
    try {
      const plan = await planner.plan({
        argv: ['/bin/true'],
        cwd: ws,
        env: { PATH: '/usr/bin:/bin' },
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
        managedNetwork: { allow: ['example.com'] },
      });
      const port = Number(new URL(plan.env.HTTPS_PROXY!).port);
      assert.ok(port > 0);
      const profile = plan.args[plan.args.indexOf('-p') + 1]!;
      assert.match(profile, new RegExp(`\\(allow network-outbound \\(remote ip "localhost:${port}"\\)\\)`));
      assert.equal((profile.match(/remote ip/g) ?? []).length, 1);
      const plain = await planner.plan({
        argv: ['/bin/true'],
        cwd: ws,
        env: { PATH: '/usr/bin:/bin' },
        tty: false,
        sandbox: sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href }),
      });
      assert.equal(plain.env.HTTPS_PROXY, undefined);
      assert.doesNotMatch(plain.args[plain.args.indexOf('-p') + 1]!, /remote ip/);
    } finally {
      planner.close();
      rmSync(ws, { recursive: true, force: true });
    }
  });

  test("macOS: the exact network rules of the profile, for our proxy and for codex's prepared context", async () => {
    const ws = mkdtempSync(join(tmpdir(), 'eb-netmac-'));
    const planner = new SandboxPlanner({ platform: 'darwin' });
    const networkPart = (args: string[]) => {
      const profile = args[args.indexOf('-p') + 1]!;
      return profile.slice(profile.indexOf('; network\n')).trimEnd().split('\n');
    };
    const sandbox = sandboxForPolicy({ policy: 'workspace-write', cwd: pathToFileURL(ws).href });
    try {
      const ours = await planner.plan({
        argv: ['/bin/true'],
        cwd: ws,
        env: {},
        tty: false,
        sandbox,
        managedNetwork: { allow: ['example.com'] },
      });
      const port = Number(new URL(ours.env.HTTP_PROXY!).port);
      assert.deepEqual(networkPart(ours.args), ['; network', `(allow network-outbound (remote ip "localhost:${port}"))`]);
      assert.equal(ours.env.ALL_PROXY, `socks5h://127.0.0.1:${port}`);
      ours.dispose();
      assert.equal(planner.managedNetworkListeners, 0, 'the proxy is closed with its plan');

      const env = { HTTP_PROXY: 'http://127.0.0.1:43123', ALL_PROXY: 'socks5h://localhost:43124' };
      const codex = await planner.plan({
        argv: ['/bin/true'],
        cwd: ws,
        env,
        tty: false,
        sandbox,
        managedNetworkPorts: {
          loopbackPorts: [43124, 43123],
          allowLocalBinding: false,
          allowUnixSockets: [],
          dangerouslyAllowAllUnixSockets: false,
        },
      });
      assert.deepEqual(networkPart(codex.args), [
        '; network',
        '(allow network-outbound (remote ip "localhost:43123") (remote ip "localhost:43124"))',
      ]);
      assert.equal(codex.env.HTTP_PROXY, env.HTTP_PROXY, "codex's env is kept as prepared");
      codex.dispose();

      const binding = await planner.plan({
        argv: ['/bin/true'],
        cwd: ws,
        env,
        tty: false,
        sandbox,
        managedNetworkPorts: {
          loopbackPorts: [43123, 43124],
          allowLocalBinding: true,
          allowUnixSockets: [],
          dangerouslyAllowAllUnixSockets: false,
        },
      });
      assert.deepEqual(networkPart(binding.args), [
        '; network',
        '(allow network-outbound (remote ip "localhost:43123") (remote ip "localhost:43124"))',
        '(allow network-bind (local ip "localhost:*"))',
        '(allow network-inbound (local ip "localhost:*"))',
        '(allow network-outbound (remote ip "localhost:*"))',
      ]);
      binding.dispose();
      // An env naming a port the context does not list gets neither.
      await assert.rejects(
        planner.plan({
          argv: ['/bin/true'],
          cwd: ws,
          env,
          tty: false,
          sandbox,
          managedNetworkPorts: {
            loopbackPorts: [43123],
            allowLocalBinding: false,
            allowUnixSockets: [],
            dangerouslyAllowAllUnixSockets: false,
          },
        }),
        /ALL_PROXY names port 43124/,
      );
    } finally {
      planner.close();
      rmSync(ws, { recursive: true, force: true });
    }
  });
});
