import { SYSCALLS } from './seccomp';

/*
 * The managed network's in-sandbox launcher (Linux). bwrap runs it as the sandbox's first process,
 * inside a network namespace that has only its own loopback and no seccomp filter yet. It:
 *  1. makes itself non-dumpable (nothing without CAP_SYS_PTRACE can ptrace it or open its
 *     /proc/PID/mem, and the command has no capabilities);
 *  2. listens on 127.0.0.1:PORT and hands the listener to a bridge process (double fork: the
 *     bridge is bwrap's child, not the command's, so a `wait` in the command never meets it), which
 *     relays each connection to the proxy's unix socket, bind-mounted into the sandbox;
 *  3. installs the managed-network seccomp filter (no new unix sockets, see seccomp.ts) with
 *     no_new_privs, and execs the command.
 * The listener exists before the command starts, so the first connection never races the bridge.
 * It is Perl because perl-base is on every Debian-family system (it is Essential) and starts in
 * about 2 ms; Node's own start costs 60 ms or more, socat a package and no way to be non-dumpable.
 * Only builtins are used (no module loads). Errors go to stderr as `exec-bridge network bridge: …` and
 * exit 127 (setup failures, never a run without the filter).
 */
const SCRIPT = String.raw`
# No modules (Socket alone costs ~10 ms to load): Linux constants, sockaddrs packed by hand.
my ($hex, $port, $path, $prctl, $seccomp, $closenr) = splice(@ARGV, 0, 6);
$_ += 0 for $port, $prctl, $seccomp, $closenr; # numbers, not strings: syscall passes strings as pointers
sub fail { print STDERR "exec-bridge network bridge: $_[0]\n"; exit 127 }
syscall($prctl, 4, 0, 0, 0, 0) == 0 or fail("prctl(PR_SET_DUMPABLE): $!");
socket(my $l, 2, 1, 0) or fail("socket: $!");
setsockopt($l, 1, 2, 1);
bind($l, pack('S n C4 x8', 2, $port, 127, 0, 0, 1)) or fail("bind 127.0.0.1:$port: $!");
listen($l, 128) or fail("listen: $!");
my $p = fork(); defined $p or fail("fork: $!");
if ($p == 0) {
  my $q = fork(); exit 0 if !defined $q || $q != 0;
  open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null'); open(STDERR, '>', '/dev/null');
  for my $fd (3 .. 255) { syscall($closenr, $fd) if $fd != fileno($l) }
  $SIG{CHLD} = 'IGNORE';
  while (1) {
    accept(my $c, $l) or next;
    my $k = fork();
    if (defined $k && $k == 0) { close $l; relay($c); exit 0 }
    close $c;
  }
}
waitpid($p, 0);
close $l;
my $bpf = pack('H*', $hex);
my $prog = pack('S x![P] P', length($bpf) / 8, $bpf);
syscall($prctl, 38, 1, 0, 0, 0) == 0 or fail("prctl(PR_SET_NO_NEW_PRIVS): $!");
syscall($seccomp, 1, 0, $prog) == 0 or fail("seccomp: $!");
exec { $ARGV[0] } @ARGV;
print STDERR "$ARGV[0]: $!\n"; exit 127;
sub relay {
  my ($c) = @_;
  socket(my $u, 1, 1, 0) or return;
  connect($u, pack('S a108', 1, $path)) or return;
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
  /** The loopback port inside the sandbox that the proxy env names. */
  port: number;
  /** The proxy socket's file name inside `BRIDGE_SOCKET_DIR`. */
  socketName: string;
  /** The filter the command runs under (seccomp.managedNetworkFilter). */
  filter: Buffer;
}

/** The launcher's argv in front of the command's (which follows as given). */
export function bridgeLauncher(spec: BridgeSpec, arch: string = process.arch): string[] {
  const t = SYSCALLS[arch];
  if (!t) throw new Error(`no syscall table for architecture ${arch}`);
  return [
    '/usr/bin/perl',
    '-e',
    SCRIPT,
    spec.filter.toString('hex'),
    String(spec.port),
    `${BRIDGE_SOCKET_DIR}/${spec.socketName}`,
    String(t.launcher.prctl),
    String(t.launcher.seccomp),
    String(t.launcher.close),
  ];
}
