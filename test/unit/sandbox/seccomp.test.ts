import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  disassemble,
  evaluate,
  keyringOffFilter,
  managedNetworkFilter,
  networkOffFilter,
  SeccompAction,
  SYSCALLS,
} from '../../../src/server/sandbox/seccomp';

const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
const SOCK_STREAM = 1;
const SOCK_DGRAM = 2;
const SOCK_SEQPACKET = 5;
const SOCK_CLOEXEC_NONBLOCK = 0o2000000 | 0o4000;

for (const arch of Object.keys(SYSCALLS)) {
  const t = SYSCALLS[arch]!;
  const bpf = networkOffFilter(arch);
  const run = (nr: number, args: number[] = [], a = t.auditArch) => evaluate(bpf, { arch: a, nr, args });

  test(`seccomp (${arch}): inet sockets and connect get EPERM, unix streams and everything else pass`, () => {
    assert.equal(bpf.length % 8, 0);
    assert.ok(disassemble(bpf).length < 40, 'a small program');
    assert.equal(run(t.socket, [AF_INET, SOCK_STREAM]), SeccompAction.eperm);
    assert.equal(run(t.socket, [AF_INET6, SOCK_DGRAM]), SeccompAction.eperm);
    assert.equal(run(t.socket, [AF_NETLINK, SOCK_DGRAM]), SeccompAction.eperm);
    assert.equal(run(t.socket, [AF_UNIX, SOCK_DGRAM]), SeccompAction.eperm, 'a unix datagram could be sent to a host socket');
    assert.equal(run(t.socketpair, [AF_UNIX, SOCK_DGRAM]), SeccompAction.eperm);
    assert.equal(run(t.socket, [AF_UNIX, SOCK_STREAM]), SeccompAction.allow);
    assert.equal(run(t.socket, [AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC_NONBLOCK]), SeccompAction.allow, 'flags in the type are ignored');
    assert.equal(run(t.socketpair, [AF_UNIX, SOCK_SEQPACKET]), SeccompAction.allow);
    assert.equal(run(t.connect, [3, 0x1000, 16]), SeccompAction.eperm);
    for (const nr of t.ioUring) assert.equal(run(nr), SeccompAction.eperm);
    // Ordinary syscalls (read=0/63, write=1/64, openat=257/56, execve=59/221) are untouched.
    for (const nr of [0, 1, 56, 59, 63, 64, 221, 257])
      if (nr !== t.socket && nr !== t.socketpair && nr !== t.connect) assert.equal(run(nr), SeccompAction.allow, `nr ${nr}`);
  });

  test(`seccomp (${arch}): calls from another ABI are refused wholesale`, () => {
    assert.equal(run(0, [], 0x40000003 /* AUDIT_ARCH_I386 */), SeccompAction.eperm);
    assert.equal(run(0, [], 0x40000028 /* AUDIT_ARCH_ARM */), SeccompAction.eperm);
    if (t.foreignAbiFloor !== undefined) assert.equal(run(t.foreignAbiFloor + t.socket, [AF_INET]), SeccompAction.eperm, 'x32');
  });

  test(`seccomp (${arch}): the keyring calls (add_key, request_key, keyctl) get EPERM with the network off`, () => {
    assert.equal(t.keyring.length, 3);
    for (const nr of t.keyring) assert.equal(run(nr), SeccompAction.eperm, `nr ${nr}`);
    for (const nr of t.compat.keyring) assert.equal(run(nr, [], t.compat.auditArch), SeccompAction.eperm, `compat nr ${nr}`);
  });

  test(`seccomp (${arch}): the keyring-only filter (network on) denies the keyring calls in every ABI and nothing else`, () => {
    const kr = keyringOffFilter(arch);
    const ev = (nr: number, a = t.auditArch, args: number[] = []) => evaluate(kr, { arch: a, nr, args });
    assert.equal(kr.length % 8, 0);
    for (const nr of t.keyring) assert.equal(ev(nr), SeccompAction.eperm, `native ${nr}`);
    if (t.foreignAbiFloor !== undefined)
      for (const nr of t.keyring) assert.equal(ev(t.foreignAbiFloor + nr), SeccompAction.eperm, `x32 ${nr}`);
    for (const nr of t.compat.keyring) assert.equal(ev(nr, t.compat.auditArch), SeccompAction.eperm, `compat ${nr}`);
    // The network and 32-bit programs keep working: sockets, connect, io_uring and compat calls pass.
    assert.equal(ev(t.socket, t.auditArch, [AF_INET, SOCK_STREAM]), SeccompAction.allow);
    assert.equal(ev(t.connect), SeccompAction.allow);
    for (const nr of t.ioUring) assert.equal(ev(nr), SeccompAction.allow);
    for (const nr of [0, 1, 3, 4, 11, 102]) assert.equal(ev(nr, t.compat.auditArch), SeccompAction.allow, `compat nr ${nr}`);
    for (const nr of [0, 1, 56, 59, 63, 64, 221, 257]) if (!t.keyring.includes(nr)) assert.equal(ev(nr), SeccompAction.allow, `nr ${nr}`);
    if (t.foreignAbiFloor !== undefined) assert.equal(ev(t.foreignAbiFloor + 1), SeccompAction.allow, 'x32 write');
    assert.equal(ev(0, 0xdeadbeef), SeccompAction.eperm, 'an ABI we do not know is refused');
  });
}

test('seccomp: unknown architectures are refused, not guessed', () => {
  assert.throws(() => networkOffFilter('mips'), /no seccomp syscall table/);
  assert.throws(() => keyringOffFilter('mips'), /no seccomp syscall table/);
});

test('seccomp: the x86_64 program is byte-for-byte stable (what bwrap reads)', () => {
  const insns = disassemble(networkOffFilter('x64'));
  assert.deepEqual(insns[0], [0x20, 0, 0, 4], 'load arch');
  assert.deepEqual(insns[1]![0], 0x15);
  assert.deepEqual(insns.at(-1), [0x06, 0, 0, SeccompAction.allow]);
  assert.deepEqual(insns.at(-2), [0x06, 0, 0, SeccompAction.eperm]);
});

const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNS = 0x00020000;
const FORK_FLAGS = 0x01200011; // what fork() passes to clone: CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD

for (const arch of Object.keys(SYSCALLS)) {
  const t = SYSCALLS[arch]!;
  const u = t.userns;
  test(`seccomp (${arch}): no filter lets the command make a user namespace; forks and threads pass`, () => {
    const filters = { 'network off': networkOffFilter(arch), 'keyring off': keyringOffFilter(arch), managed: managedNetworkFilter(arch) };
    for (const [name, bpf] of Object.entries(filters)) {
      const ev = (nr: number, args: number[] = [], a = t.auditArch) => evaluate(bpf, { arch: a, nr, args });
      assert.equal(ev(u.unshare, [CLONE_NEWUSER]), SeccompAction.eperm, `${name}: unshare(CLONE_NEWUSER)`);
      assert.equal(ev(u.unshare, [CLONE_NEWUSER | CLONE_NEWNS]), SeccompAction.eperm, `${name}: unshare -Urm`);
      assert.equal(ev(u.clone, [CLONE_NEWUSER | 17]), SeccompAction.eperm, `${name}: clone(CLONE_NEWUSER)`);
      assert.equal(ev(u.clone3), SeccompAction.enosys, `${name}: clone3 (glibc falls back to clone)`);
      assert.equal(ev(u.clone, [FORK_FLAGS]), SeccompAction.allow, `${name}: fork`);
      assert.equal(
        ev(u.unshare, [CLONE_NEWNS]),
        SeccompAction.allow,
        `${name}: unshare(CLONE_NEWNS) is the kernel's to refuse (no capability)`,
      );
      // Other ABIs: refused wholesale by the first two, checked call by call by keyring-off.
      assert.equal(ev(u.compat.unshare, [CLONE_NEWUSER], t.compat.auditArch), SeccompAction.eperm, `${name}: compat unshare`);
      assert.equal(ev(u.compat.clone3, [], t.compat.auditArch) !== SeccompAction.allow, true, `${name}: compat clone3`);
      if (t.foreignAbiFloor !== undefined)
        assert.equal(ev((t.foreignAbiFloor | u.unshare) >>> 0, [CLONE_NEWUSER]), SeccompAction.eperm, `${name}: x32 unshare`);
    }
    const kr = filters['keyring off'];
    assert.equal(evaluate(kr, { arch: t.compat.auditArch, nr: u.compat.clone, args: [FORK_FLAGS] }), SeccompAction.allow, 'compat fork');
  });
}
