/*
 * The network-off seccomp filter, as a classic-BPF program built in plain JS and handed to
 * `bwrap --seccomp FD` (bwrap sets no_new_privs and installs it right before exec'ing the command).
 *
 * What it does, for the native architecture only:
 *  - any syscall from another ABI (x32 on x86_64, 32-bit compat via `int 0x80`, …) ⇒ EPERM, because
 *    those use other syscall numbers (i386 `socketcall`) the checks below would miss;
 *  - `socket`/`socketpair` ⇒ EPERM unless the domain is AF_UNIX with a stream or seqpacket type
 *    (no inet/inet6/netlink/packet sockets, no unix datagrams that could be sent to a host socket);
 *  - `connect` ⇒ EPERM: with no inet sockets left this only blocks unix sockets, which is what keeps
 *    the host's docker/ssh-agent/dbus/VS Code IPC sockets unreachable through a read-only mount;
 *  - `io_uring_*` ⇒ EPERM (io_uring can connect without the `connect` syscall);
 *  - `add_key`/`request_key`/`keyctl` ⇒ EPERM (Docker's default profile answers the same): the
 *    kernel keyrings are not namespaced, so the user's session keyring would be shared;
 *  - `unshare`/`clone` with CLONE_NEWUSER ⇒ EPERM, `clone3` ⇒ ENOSYS (its flags are behind a
 *    pointer; glibc then falls back to `clone`), in every filter and every ABI it allows: in a user
 *    namespace of its own the command could make a mount namespace, pivot away from the sandbox's
 *    mounts and detach them, and then rename what they kept read-only (`.git`, say: measured, it
 *    then wrote a new `.git/config` on the host). Without one it has no capability to mount at all;
 *  - everything else is allowed. Nothing is ever killed: denied calls fail with EPERM so that
 *    programs print a normal "Operation not permitted" error.
 */

// BPF opcodes (linux/bpf_common.h).
const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const AND_K = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K

const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_NEWUSER = 0x10000000;

// Offsets in struct seccomp_data: nr (u32), arch (u32), ip (u64), args[6] (u64, low word first on LE).
const OFF_NR = 0;
const OFF_ARCH = 4;
const offArgLow = (i: number) => 16 + 8 * i;

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_SEQPACKET = 5;
/** The low bits of `type` hold the socket type; SOCK_NONBLOCK/SOCK_CLOEXEC live above. */
const SOCK_TYPE_MASK = 0xf;

export interface SyscallTable {
  /** AUDIT_ARCH_* value seen in seccomp_data.arch for native calls. */
  auditArch: number;
  /** Native syscall numbers at or above this belong to another ABI (x32); undefined when none. */
  foreignAbiFloor?: number;
  socket: number;
  socketpair: number;
  connect: number;
  ioUring: number[];
  /** add_key, request_key, keyctl. */
  keyring: number[];
  /** The 32-bit compat ABI (i386 on x86_64, arm on arm64): its AUDIT_ARCH and keyring numbers. */
  compat: { auditArch: number; keyring: number[] };
  /** ptrace, process_vm_readv, process_vm_writev, pidfd_getfd: reaching into another process (the managed network's bridge). */
  reachIn: number[];
  /** What the managed network's launcher calls itself (./netBridge.ts): prctl, seccomp, close, unshare, capset. */
  launcher: { prctl: number; seccomp: number; close: number; unshare: number; capset: number };
  /** What makes a user namespace: clone and unshare (with CLONE_NEWUSER), clone3; native and 32-bit compat. */
  userns: { clone: number; unshare: number; clone3: number; compat: { clone: number; unshare: number; clone3: number } };
}

/** Syscall numbers per Node `process.arch` (linux/arch/x86/entry/syscalls, asm-generic/unistd.h). */
export const SYSCALLS: Readonly<Record<string, SyscallTable>> = {
  x64: {
    auditArch: 0xc000003e,
    foreignAbiFloor: 0x40000000,
    socket: 41,
    socketpair: 53,
    connect: 42,
    ioUring: [425, 426, 427],
    keyring: [248, 249, 250],
    compat: { auditArch: 0x40000003, keyring: [286, 287, 288] },
    reachIn: [101, 310, 311, 438],
    launcher: { prctl: 157, seccomp: 317, close: 3, unshare: 272, capset: 126 },
    userns: { clone: 56, unshare: 272, clone3: 435, compat: { clone: 120, unshare: 310, clone3: 435 } },
  },
  arm64: {
    auditArch: 0xc00000b7,
    socket: 198,
    socketpair: 199,
    connect: 203,
    ioUring: [425, 426, 427],
    keyring: [217, 218, 219],
    compat: { auditArch: 0x40000028, keyring: [309, 310, 311] },
    reachIn: [117, 270, 271, 438],
    launcher: { prctl: 167, seccomp: 277, close: 57, unshare: 97, capset: 91 },
    userns: { clone: 220, unshare: 97, clone3: 435, compat: { clone: 120, unshare: 337, clone3: 435 } },
  },
};

interface Insn {
  code: number;
  jt: number | string;
  jf: number | string;
  k: number;
}

/** A tiny assembler: jump targets may be labels, resolved to relative offsets. */
class Program {
  private readonly insns: Insn[] = [];
  private readonly labels = new Map<string, number>();

  label(name: string): this {
    this.labels.set(name, this.insns.length);
    return this;
  }
  load(offset: number): this {
    return this.push(LD_W_ABS, 0, 0, offset);
  }
  and(mask: number): this {
    return this.push(AND_K, 0, 0, mask);
  }
  jeq(k: number, jt: number | string, jf: number | string = 0): this {
    return this.push(JEQ_K, jt, jf, k);
  }
  jge(k: number, jt: number | string, jf: number | string = 0): this {
    return this.push(JGE_K, jt, jf, k);
  }
  ret(k: number): this {
    return this.push(RET_K, 0, 0, k);
  }

  private push(code: number, jt: number | string, jf: number | string, k: number): this {
    this.insns.push({ code, jt, jf, k });
    return this;
  }

  /** `struct sock_filter[]`, little-endian: u16 code, u8 jt, u8 jf, u32 k. */
  assemble(): Buffer {
    const out = Buffer.alloc(this.insns.length * 8);
    this.insns.forEach((insn, i) => {
      const rel = (target: number | string): number => {
        if (typeof target === 'number') return target;
        const at = this.labels.get(target);
        if (at === undefined) throw new Error(`seccomp: unknown label ${target}`);
        const off = at - (i + 1);
        if (off < 0 || off > 255) throw new Error(`seccomp: jump to ${target} out of range`);
        return off;
      };
      out.writeUInt16LE(insn.code, i * 8);
      out.writeUInt8(rel(insn.jt), i * 8 + 2);
      out.writeUInt8(rel(insn.jf), i * 8 + 3);
      out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
    });
    return out;
  }
}

/**
 * With the syscall number loaded: `clone`/`unshare` go to `userns`, `clone3` to `enosys` (see the
 * top of this file). `nr` maps a native number to the one checked (the x32 variant, say).
 */
function jumpUserns(p: Program, calls: { clone: number; unshare: number; clone3: number }, nr = (n: number) => n): void {
  p.jeq(nr(calls.clone), 'userns').jeq(nr(calls.unshare), 'userns').jeq(nr(calls.clone3), 'enosys');
}

/** The targets of `jumpUserns`: CLONE_NEWUSER in the flags (the first argument of both) ⇒ EPERM, else allowed. */
function usernsLabels(p: Program): void {
  p.label('userns').load(offArgLow(0)).and(CLONE_NEWUSER).jeq(CLONE_NEWUSER, 'deny', 'allow');
  p.label('enosys').ret(SECCOMP_RET_ERRNO | ENOSYS);
}

/** The network-off filter for `arch` (a Node `process.arch` value); throws for unsupported ones. */
export function networkOffFilter(arch: string = process.arch): Buffer {
  const t = SYSCALLS[arch];
  if (!t) throw new Error(`no seccomp syscall table for architecture ${arch}`);
  const p = new Program();
  p.load(OFF_ARCH).jeq(t.auditArch, 0, 'deny');
  p.load(OFF_NR);
  if (t.foreignAbiFloor !== undefined) p.jge(t.foreignAbiFloor, 'deny');
  p.jeq(t.socket, 'socket').jeq(t.socketpair, 'socket').jeq(t.connect, 'deny');
  for (const nr of [...t.ioUring, ...t.keyring]) p.jeq(nr, 'deny');
  jumpUserns(p, t.userns);
  p.ret(SECCOMP_RET_ALLOW);
  usernsLabels(p);
  p.label('socket')
    .load(offArgLow(0))
    .jeq(AF_UNIX, 0, 'deny')
    .load(offArgLow(1))
    .and(SOCK_TYPE_MASK)
    .jeq(SOCK_STREAM, 'allow')
    .jeq(SOCK_SEQPACKET, 'allow');
  p.label('deny').ret(SECCOMP_RET_ERRNO | EPERM);
  p.label('allow').ret(SECCOMP_RET_ALLOW);
  return p.assemble();
}

const AF_INET = 2;
const AF_INET6 = 10;

/**
 * The managed-network filter for `arch`, installed by the in-sandbox launcher on the command after
 * the bridge is listening (./netBridge.ts). Like the network-off filter, except that IP sockets
 * are allowed (the network namespace has nothing but its own loopback, where the bridge listens)
 * and so is `connect`; what makes the host's unix sockets unreachable instead is that no unix
 * socket can be made at all (`socket(AF_UNIX, …)` ⇒ EPERM; `socketpair` still works, its ends come
 * connected). The bridge runs unfiltered, so reaching into it (ptrace, process_vm_*, pidfd_getfd)
 * is denied as well; it is also non-dumpable, which closes /proc/PID/mem.
 */
export function managedNetworkFilter(arch: string = process.arch): Buffer {
  const t = SYSCALLS[arch];
  if (!t) throw new Error(`no seccomp syscall table for architecture ${arch}`);
  const p = new Program();
  p.load(OFF_ARCH).jeq(t.auditArch, 0, 'deny');
  p.load(OFF_NR);
  if (t.foreignAbiFloor !== undefined) p.jge(t.foreignAbiFloor, 'deny');
  p.jeq(t.socket, 'socket').jeq(t.socketpair, 'pair');
  for (const nr of [...t.ioUring, ...t.keyring, ...t.reachIn]) p.jeq(nr, 'deny');
  jumpUserns(p, t.userns);
  p.ret(SECCOMP_RET_ALLOW);
  usernsLabels(p);
  p.label('socket').load(offArgLow(0)).jeq(AF_INET, 'allow').jeq(AF_INET6, 'allow', 'deny');
  p.label('pair')
    .load(offArgLow(0))
    .jeq(AF_UNIX, 0, 'deny')
    .load(offArgLow(1))
    .and(SOCK_TYPE_MASK)
    .jeq(SOCK_STREAM, 'allow')
    .jeq(SOCK_SEQPACKET, 'allow');
  p.label('deny').ret(SECCOMP_RET_ERRNO | EPERM);
  p.label('allow').ret(SECCOMP_RET_ALLOW);
  return p.assemble();
}

/**
 * The keyring-only filter for `arch` (network-on starts): `add_key`, `request_key` and `keyctl`
 * ⇒ EPERM in the native ABI, x32 (x86_64) and the 32-bit compat ABI; any other ABI (none exists on
 * these kernels) ⇒ EPERM wholesale; everything else is allowed.
 */
export function keyringOffFilter(arch: string = process.arch): Buffer {
  const t = SYSCALLS[arch];
  if (!t) throw new Error(`no seccomp syscall table for architecture ${arch}`);
  const p = new Program();
  p.load(OFF_ARCH).jeq(t.auditArch, 'native').jeq(t.compat.auditArch, 'compat', 'deny');
  p.label('native').load(OFF_NR);
  for (const nr of t.keyring) {
    p.jeq(nr, 'deny');
    if (t.foreignAbiFloor !== undefined) p.jeq((t.foreignAbiFloor | nr) >>> 0, 'deny');
  }
  jumpUserns(p, t.userns);
  const floor = t.foreignAbiFloor;
  if (floor !== undefined) jumpUserns(p, t.userns, (n) => (floor | n) >>> 0);
  p.ret(SECCOMP_RET_ALLOW);
  p.label('compat').load(OFF_NR);
  for (const nr of t.compat.keyring) p.jeq(nr, 'deny');
  jumpUserns(p, t.userns.compat);
  p.ret(SECCOMP_RET_ALLOW);
  usernsLabels(p);
  p.label('deny').ret(SECCOMP_RET_ERRNO | EPERM);
  p.label('allow').ret(SECCOMP_RET_ALLOW);
  return p.assemble();
}

/** Decodes a program (for tests and debugging): `[code, jt, jf, k]` per instruction. */
export function disassemble(bpf: Buffer): Array<[number, number, number, number]> {
  const out: Array<[number, number, number, number]> = [];
  for (let i = 0; i + 8 <= bpf.length; i += 8)
    out.push([bpf.readUInt16LE(i), bpf.readUInt8(i + 2), bpf.readUInt8(i + 3), bpf.readUInt32LE(i + 4)]);
  return out;
}

/**
 * Runs the program over one syscall, as the kernel would (for unit tests: they check the verdict of
 * real syscall numbers without needing a kernel). Returns the 32-bit action.
 */
export function evaluate(bpf: Buffer, call: { arch: number; nr: number; args?: number[] }): number {
  const prog = disassemble(bpf);
  let a = 0;
  for (let pc = 0, steps = 0; pc < prog.length && steps < 1000; steps++) {
    const [code, jt, jf, k] = prog[pc]!;
    pc++;
    switch (code) {
      case LD_W_ABS:
        if (k === OFF_NR) a = call.nr >>> 0;
        else if (k === OFF_ARCH) a = call.arch >>> 0;
        else if (k >= 16 && (k - 16) % 8 === 0) a = (call.args?.[(k - 16) / 8] ?? 0) >>> 0;
        else throw new Error(`unexpected load offset ${k}`);
        break;
      case AND_K:
        a = (a & k) >>> 0;
        break;
      case JEQ_K:
        pc += a === k ? jt : jf;
        break;
      case JGE_K:
        pc += a >= k ? jt : jf;
        break;
      case RET_K:
        return k;
      default:
        throw new Error(`unexpected opcode ${code}`);
    }
  }
  throw new Error('program fell off the end');
}

export const SeccompAction = { allow: SECCOMP_RET_ALLOW, eperm: SECCOMP_RET_ERRNO | EPERM, enosys: SECCOMP_RET_ERRNO | ENOSYS } as const;
