import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isSpecialAddress, NetPolicy, NetRuleError, parseNetRule } from '../../../src/server/netProxyRules';
import { bwrapArgs } from '../../../src/server/sandbox/bwrapArgs';
import { checkPreparedEnv, proxyEnv } from '../../../src/server/sandbox/managedNet';
import { BRIDGE_SOCKET_DIR, bridgeLauncher, LAUNCHER_ENV_PREFIX, launcherEnv } from '../../../src/server/sandbox/netBridge';
import { evaluate, managedNetworkFilter, SeccompAction, SYSCALLS } from '../../../src/server/sandbox/seccomp';

describe('managed network rules', () => {
  test('parses host, *.host, IP literals and ports', () => {
    assert.deepEqual(parseNetRule('Registry.NPMjs.org.'), { host: 'registry.npmjs.org', wildcard: false, ip: false, port: undefined });
    assert.deepEqual(parseNetRule('*.github.com:443'), { host: 'github.com', wildcard: true, ip: false, port: 443 });
    assert.deepEqual(parseNetRule('127.0.0.1:8080'), { host: '127.0.0.1', wildcard: false, ip: true, port: 8080 });
    assert.deepEqual(parseNetRule('[::1]:22'), { host: '::1', wildcard: false, ip: true, port: 22 });
    assert.deepEqual(parseNetRule('::1'), { host: '::1', wildcard: false, ip: true, port: undefined });
    for (const bad of ['', 'http://x/', 'a b', '*', 'x:0', 'x:70000', '[example.com]:1', '*.'])
      assert.throws(() => parseNetRule(bad), NetRuleError, bad);
  });

  test('matching: exact names, subdomains for *., ports, and deny wins', () => {
    const p = new NetPolicy(['example.com', '*.corp.test:443', '10.0.0.1'], ['secret.corp.test']);
    assert.equal(p.check('EXAMPLE.com.', 80).ok, true);
    assert.equal(p.check('www.example.com', 80).ok, false, 'a bare name does not cover its subdomains');
    assert.equal(p.check('a.corp.test', 443).ok, true);
    assert.equal(p.check('a.corp.test', 80).ok, false, 'the port is part of the rule');
    assert.equal(p.check('corp.test', 443).ok, false, '*. is subdomains only');
    assert.equal(p.check('secret.corp.test', 443).ok, false, 'the deny-list wins');
    assert.equal(p.check('10.0.0.1', 1234).ok, true);
    assert.equal(p.check('::ffff:10.0.0.1', 1234).ok, true, 'IPv4-mapped IPv6 is the same address');
  });

  test('a permitted name resolving to loopback, link-local or metadata is refused unless that literal is listed', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '169.254.169.254', 'fe80::1', '0.0.0.0', '::ffff:127.0.0.1', 'fd00:ec2::254'])
      assert.equal(isSpecialAddress(a), true, a);
    for (const a of ['10.0.0.1', '93.184.216.34', '2001:db8::1']) assert.equal(isSpecialAddress(a), false, a);
    const p = new NetPolicy(['localhost', 'example.com']);
    assert.equal(p.checkResolved('127.0.0.1', 80).ok, false);
    assert.equal(p.checkResolved('93.184.216.34', 80).ok, true);
    assert.equal(new NetPolicy(['localhost', '127.0.0.1:80']).checkResolved('127.0.0.1', 80).ok, true);
    assert.equal(new NetPolicy(['localhost', '127.0.0.1:80']).checkResolved('127.0.0.1', 81).ok, false);
    assert.equal(new NetPolicy(['x.test'], ['93.184.216.34']).checkResolved('93.184.216.34', 80).ok, false, 'a denied address');
  });

  test('the proxy env names one port in every variable, both cases; loopback bypasses unless listed', () => {
    const env = proxyEnv(3128, new NetPolicy(['example.com']));
    for (const k of ['HTTP_PROXY', 'HTTPS_PROXY']) {
      assert.equal(env[k], 'http://127.0.0.1:3128');
      assert.equal(env[k.toLowerCase()], 'http://127.0.0.1:3128');
    }
    assert.equal(env.ALL_PROXY, 'socks5h://127.0.0.1:3128');
    assert.equal(env.no_proxy, 'localhost,127.0.0.1,::1');
    assert.equal(proxyEnv(3128, new NetPolicy(['127.0.0.1:9'])).NO_PROXY, '');
  });
});

describe('managed network filter', () => {
  for (const arch of Object.keys(SYSCALLS)) {
    test(`${arch}: IP sockets and connect allowed; no new unix sockets; no reaching into the bridge`, () => {
      const t = SYSCALLS[arch]!;
      const bpf = managedNetworkFilter(arch);
      const run = (nr: number, args: number[] = [], a = t.auditArch) => evaluate(bpf, { arch: a, nr, args });
      assert.equal(run(t.socket, [2, 1]), SeccompAction.allow); // AF_INET stream
      assert.equal(run(t.socket, [10, 2]), SeccompAction.allow); // AF_INET6 dgram
      assert.equal(run(t.connect), SeccompAction.allow);
      assert.equal(run(t.socket, [1, 1]), SeccompAction.eperm); // AF_UNIX stream
      assert.equal(run(t.socket, [1, 2]), SeccompAction.eperm); // AF_UNIX dgram
      assert.equal(run(t.socket, [16, 3]), SeccompAction.eperm); // netlink
      assert.equal(run(t.socket, [17, 3]), SeccompAction.eperm); // packet
      assert.equal(run(t.socketpair, [1, 1]), SeccompAction.allow);
      assert.equal(run(t.socketpair, [1, 2]), SeccompAction.eperm);
      for (const nr of [...t.reachIn, ...t.ioUring, ...t.keyring]) assert.equal(run(nr), SeccompAction.eperm, String(nr));
      assert.equal(run(t.socket, [2, 1], t.compat.auditArch), SeccompAction.eperm, 'another ABI');
      if (t.foreignAbiFloor !== undefined) assert.equal(run(t.foreignAbiFloor + t.socket, [2, 1]), SeccompAction.eperm, 'x32');
    });
  }
});

describe('managed network sandbox plan', () => {
  const layout = { root: 'ro' as const, mounts: [], writableRoots: [], protectedPaths: [] };
  test('bwrap binds the socket directory at the bridge path and runs the launcher in front of the command', () => {
    const launcher = bridgeLauncher({ routes: [{ port: 3128, socketName: 'proxy.sock' }], filter: managedNetworkFilter('x64') }, 'x64');
    const a = bwrapArgs({
      layout: layout as never,
      network: 'restricted',
      cwd: '/w',
      argv: ['/bin/true'],
      tty: false,
      asRoot: false,
      managedNetwork: { socketDir: '/run/x/net-1', launcher },
    });
    const bind = a.indexOf(BRIDGE_SOCKET_DIR);
    assert.deepEqual(a.slice(bind - 2, bind + 1), ['--ro-bind', '/run/x/net-1', BRIDGE_SOCKET_DIR]);
    assert.ok(a.includes('--unshare-net'));
    assert.ok(!a.includes('--seccomp'));
    // The launcher keeps CAP_SETFCAP alone, to give the command a user namespace of its own (netBridge.ts).
    assert.deepEqual(a.slice(a.indexOf('--cap-drop'), a.indexOf('--cap-drop') + 4), ['--cap-drop', 'ALL', '--cap-add', 'CAP_SETFCAP']);
    const dashdash = a.indexOf('--');
    assert.deepEqual(a.slice(dashdash + 1, dashdash + 3), ['/usr/bin/perl', '-e']);
    assert.equal(a.at(-1), '/bin/true');
    // The command's environment goes through the environment, every name prefixed (argv is world-readable in /proc).
    assert.deepEqual(a.slice(dashdash + 1 + launcher.length), ['/bin/true']);
    assert.deepEqual(
      { ...launcherEnv({ PATH: '/bin', PERL5OPT: '-Mx', LD_LIBRARY_PATH: '/w/lib' }) },
      {
        [`${LAUNCHER_ENV_PREFIX}PATH`]: '/bin',
        [`${LAUNCHER_ENV_PREFIX}PERL5OPT`]: '-Mx',
        [`${LAUNCHER_ENV_PREFIX}LD_LIBRARY_PATH`]: '/w/lib',
      },
    );
    assert.equal(launcher[3], managedNetworkFilter('x64').toString('hex'));
    // After the filter and the syscall numbers (prctl, seccomp, close, unshare, capset): how many
    // routes, then port and socket path of each.
    assert.deepEqual(launcher.slice(4, 9), ['157', '317', '3', '272', '126']);
    assert.deepEqual(launcher.slice(9), ['1', '3128', `${BRIDGE_SOCKET_DIR}/proxy.sock`]);
    const two = bridgeLauncher(
      {
        routes: [
          { port: 41000, socketName: 'port-41000.sock' },
          { port: 41001, socketName: 'port-41001.sock' },
        ],
        filter: Buffer.alloc(8),
      },
      'x64',
    );
    assert.deepEqual(two.slice(9), ['2', '41000', `${BRIDGE_SOCKET_DIR}/port-41000.sock`, '41001', `${BRIDGE_SOCKET_DIR}/port-41001.sock`]);
    assert.throws(() => bridgeLauncher({ routes: [], filter: Buffer.alloc(8) }, 'x64'), /at least one port/);
  });
});

describe("codex's prepared context: the env check", () => {
  const ctx = { loopbackPorts: [43123], allowLocalBinding: false, allowUnixSockets: [], dangerouslyAllowAllUnixSockets: false };
  test('every proxy variable must name a listed loopback port; other variables are not read', () => {
    assert.deepEqual(
      checkPreparedEnv(
        {
          http_proxy: 'http://127.0.0.1:43123',
          HTTPS_PROXY: '127.0.0.1:43123',
          npm_config_proxy: 'http://[::1]:43123',
          NO_PROXY: 'http://10.0.0.1:1',
          ELECTRON_GET_USE_PROXY: 'true',
          OTHER: 'http://10.0.0.1:1',
        },
        ctx,
      ),
      [43123],
    );
    assert.throws(() => checkPreparedEnv({ PATH: '/bin' }, ctx), /needs the proxy env/);
    assert.throws(() => checkPreparedEnv({ HTTP_PROXY: 'http://127.0.0.1:1' }, ctx), /HTTP_PROXY names port 1/);
    assert.throws(() => checkPreparedEnv({ YARN_HTTPS_PROXY: 'http://example.com:43123' }, ctx), /not a loopback proxy/);
    assert.throws(() => checkPreparedEnv({ HTTP_PROXY: 'http://[::1' }, ctx), /not a proxy URL/);
    assert.throws(
      () => checkPreparedEnv({ HTTP_PROXY: 'http://127.0.0.1:43123' }, { ...ctx, dangerouslyAllowAllUnixSockets: true }),
      /unix sockets/,
    );
    assert.throws(() => checkPreparedEnv({ HTTP_PROXY: 'http://127.0.0.1:43123' }, { ...ctx, loopbackPorts: [0, 43123] }), /port 0/);
  });
});
