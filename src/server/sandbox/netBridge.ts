import { SYSCALLS } from './seccomp';

/*
 * The managed network's in-sandbox launcher (Linux). bwrap runs it as the sandbox's first process,
 * inside a network namespace that has only its own loopback and no seccomp filter yet. It:
 *  1. listens on 127.0.0.1:PORT (one or more ports) and hands the listeners to a bridge process
 *     (double fork: the bridge is bwrap's child, not the command's, so a `wait` in the command
 *     never meets it), which relays each connection to that port's unix socket, bind-mounted into
 *     the sandbox (our proxy's, or a relay to the host's 127.0.0.1:PORT for codex's prepared context).
 *     The bridge is non-dumpable (it and its relays cannot be ptraced or have their /proc/PID/mem
 *     opened without CAP_SYS_PTRACE, and the command has no capabilities);
 *  2. moves itself into a user namespace of its own (a child of bwrap's, mapping its uid and gid
 *     to themselves) and empties its capability bounding set again, so the command gets none. This
 *     is what shields bwrap's pid 1, which runs unfiltered and stays dumpable (we cannot change
 *     it): the kernel lets a process reach into another of the same uid (/proc/PID/mem, fds,
 *     ptrace) only from the same user namespace, or with CAP_SYS_PTRACE over the target's, and the
 *     command has neither towards pid 1 or the bridge (docs/security.md);
 *  3. installs the managed-network seccomp filter (no new unix sockets, see seccomp.ts) with
 *     no_new_privs, restores the command's environment and execs the command. Until then every
 *     variable of the command's carries a prefix (`launcherEnv`), so none of them (LD_LIBRARY_PATH
 *     naming a workspace folder, PERL5OPT, …) acts on the launcher or the bridge, which have no
 *     filter. (Through the environment, not argv: a command line is world-readable in /proc.)
 * The listener exists before the command starts, so the first connection never races the bridge.
 * It is Perl because perl-base is on every Debian-family system (it is Essential) and starts in
 * about 2 ms; Node's own start costs 60 ms or more, socat a package and no way to be non-dumpable.
 * Only builtins are used (no module loads). Errors go to stderr as `exec-bridge network bridge: …` and
 * exit 127 (setup failures, never a run without the filter or in bwrap's user namespace).
 */
/** What every variable of the command's carries in the launcher's environment (the launcher removes it). */
export const LAUNCHER_ENV_PREFIX = 'EXEC_BRIDGE_ENV_';

const SCRIPT = String.raw`
# No modules (Socket alone costs ~10 ms to load): Linux constants, sockaddrs packed by hand.
my ($hex, $prctl, $seccomp, $closenr, $unshare, $capset, $n) = splice(@ARGV, 0, 7);
$_ += 0 for $prctl, $seccomp, $closenr, $unshare, $capset, $n; # numbers, not strings: syscall passes strings as pointers
sub fail { print STDERR "exec-bridge network bridge: $_[0]\n"; exit 127 }
my (@l, %path);
for (1 .. $n) {
  my ($port, $to) = splice(@ARGV, 0, 2);
  socket(my $s, 2, 1, 0) or fail("socket: $!");
  setsockopt($s, 1, 2, 1);
  bind($s, pack('S n C4 x8', 2, $port + 0, 127, 0, 0, 1)) or fail("bind 127.0.0.1:$port: $!");
  listen($s, 128) or fail("listen: $!");
  push @l, $s; $path{fileno($s)} = $to;
}
my $p = fork(); defined $p or fail("fork: $!");
if ($p == 0) {
  syscall($prctl, 4, 0, 0, 0, 0) == 0 or fail("prctl(PR_SET_DUMPABLE): $!"); # the bridge inherits it
  # No capabilities (bwrap left us CAP_SETFCAP for the user namespace below): capset v3, all zero.
  my ($hdr, $none) = (pack('L l', 0x20080522, 0), "\0" x 24); # syscall wants writable buffers
  syscall($capset, $hdr, $none) == 0 or fail("capset: $!");
  my $q = fork(); defined $q or fail("fork: $!"); exit 0 if $q != 0;
  open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null'); open(STDERR, '>', '/dev/null');
  for my $fd (3 .. 255) { syscall($closenr, $fd) unless exists $path{$fd} }
  $SIG{CHLD} = 'IGNORE';
  my $rin = ''; vec($rin, fileno($_), 1) = 1 for @l;
  while (1) {
    my $ready = select(my $r = $rin, undef, undef, undef);
    next if $ready <= 0;
    for my $s (@l) {
      next unless vec($r, fileno($s), 1);
      accept(my $c, $s) or next;
      my $k = fork();
      if (defined $k && $k == 0) { my $to = $path{fileno($s)}; close $_ for @l; relay($c, $to); exit 0 }
      close $c;
    }
  }
}
waitpid($p, 0) == $p && $? == 0 or exit 127;
close $_ for @l;
# Our own user namespace (CLONE_NEWUSER), our ids mapped to themselves, the bounding set emptied again.
# Mapping uid 0 needs CAP_SETFCAP when unsharing (bwrapArgs keeps that one capability for us).
my ($uid, $gid) = ($> + 0, $) + 0);
syscall($unshare, 0x10000000) == 0 or fail("unshare(CLONE_NEWUSER): $!");
for (['setgroups', 'deny'], ['uid_map', "$uid $uid 1"], ['gid_map', "$gid $gid 1"]) {
  my ($f, $v) = @$_;
  my $h; # declared apart: a lexical is in scope only from the next statement on
  sysopen($h, "/proc/self/$f", 1) && syswrite($h, $v) == length($v) or fail("/proc/self/$f: $!");
  close $h;
}
my $cap = 0;
$cap++ while syscall($prctl, 24, $cap, 0, 0, 0) == 0; # PR_CAPBSET_DROP until EINVAL past the last one
$! == 22 && $cap >= 32 or fail("prctl(PR_CAPBSET_DROP, $cap): $!");
my $bpf = pack('H*', $hex);
my $prog = pack('S x![P] P', length($bpf) / 8, $bpf);
syscall($prctl, 38, 1, 0, 0, 0) == 0 or fail("prctl(PR_SET_NO_NEW_PRIVS): $!");
syscall($seccomp, 1, 0, $prog) == 0 or fail("seccomp: $!");
my $pwd = $ENV{PWD}; # bwrap's --chdir sets it, as for every sandboxed command
# The command's environment: each prefixed name unprefixed, over what bwrap (PWD) or node-pty (TERM) set.
for my $k (keys %ENV) { next unless index($k, '${LAUNCHER_ENV_PREFIX}') == 0; my $v = delete $ENV{$k}; $ENV{substr($k, ${LAUNCHER_ENV_PREFIX.length})} = $v }
$ENV{PWD} = $pwd if defined $pwd;
exec { $ARGV[0] } @ARGV;
print STDERR "$ARGV[0]: $!\n"; exit 127;
sub relay {
  my ($c, $to) = @_;
  socket(my $u, 1, 1, 0) or return;
  connect($u, pack('S a108', 1, $to)) or return;
  my %peer = (fileno($c) => [$c, $u], fileno($u) => [$u, $c]);
  my $rin = ''; vec($rin, $_, 1) = 1 for keys %peer;
  my $open = 2;
  while ($open > 0) {
    my $n = select(my $r = $rin, undef, undef, undef);
    next if $n <= 0;
    for my $fd (keys %peer) {
      next unless vec($r, $fd, 1);
      my ($from, $to) = @{$peer{$fd}};
      my $got = sysread($from, my $buf, 65536);
      if (!$got) { shutdown($to, 1); vec($rin, $fd, 1) = 0; $open--; next }
      for (my $off = 0; $off < $got;) { my $w = syswrite($to, $buf, $got - $off, $off); return unless $w; $off += $w }
    }
  }
}
`;

/** Where the proxy's socket directory appears inside the sandbox (on bwrap's fresh /dev tmpfs, never on the host). */
export const BRIDGE_SOCKET_DIR = '/dev/exec-bridge-net';

export interface BridgeSpec {
  /** Each loopback port inside the sandbox that the env names, and its socket's file name inside `BRIDGE_SOCKET_DIR`. */
  routes: Array<{ port: number; socketName: string }>;
  /** The filter the command runs under (seccomp.managedNetworkFilter). */
  filter: Buffer;
}

/** The launcher's argv in front of the command's (which follows as given). */
export function bridgeLauncher(spec: BridgeSpec, arch: string = process.arch): string[] {
  const t = SYSCALLS[arch];
  if (!t) throw new Error(`no syscall table for architecture ${arch}`);
  if (spec.routes.length === 0) throw new Error('the network bridge needs at least one port');
  return [
    '/usr/bin/perl',
    '-e',
    SCRIPT,
    spec.filter.toString('hex'),
    String(t.launcher.prctl),
    String(t.launcher.seccomp),
    String(t.launcher.close),
    String(t.launcher.unshare),
    String(t.launcher.capset),
    String(spec.routes.length),
    ...spec.routes.flatMap((r) => [String(r.port), `${BRIDGE_SOCKET_DIR}/${r.socketName}`]),
  ];
}

/**
 * The environment bwrap and the launcher get for a command's `env`: every name prefixed, so nothing
 * in it (the dynamic loader's variables, Perl's) acts on them; the launcher restores it before exec.
 */
export function launcherEnv(env: Record<string, string>): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(env)) out[LAUNCHER_ENV_PREFIX + k] = v;
  return out;
}
