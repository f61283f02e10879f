/*
 * The usage texts of every command, with no imports: the dispatcher (main.ts) prints them all for
 * `--help` without loading any command's bundle, and each command prints its own.
 */

export const SERVE_USAGE = `usage: exec-bridge serve [--listen ws://HOST:PORT | unix:PATH | stdio] [--token-file FILE]
                        [--session-ttl-ms N] [--max-session-ttl-ms N] [--allow-origin ORIGIN]... [--bwrap-path PATH]
                        [--sandbox-prewarm-ms N] [--exit-with-stdin] [--idle-exit-ms N] [--verbose]
                        [--spool-process-bytes N] [--spool-total-bytes N]

  --listen          where to listen (default ws://127.0.0.1:0; port 0 picks a free one).
                    Prints exactly one line on stdout: the bound ws:// URL.
                    "unix:PATH": WebSocket over a unix socket (made 0600; put it in a directory only
                    you can open); prints ws+unix:PATH:/.
                    "stdio" serves one connection as newline-delimited JSON on stdin/stdout.
  --token-file      WebSocket clients must send "Authorization: Bearer <token>" (file content, trimmed).
                    The file must be yours and not accessible by group or others (chmod 600).
                    The environment variable EXEC_BRIDGE_TOKEN works too. Without a token, any
                    local user can connect: serve warns on stderr.
  --session-ttl-ms  how long a detached session is kept when its client asks for nothing (codex-style
                    clients), and an exited process while its session is attached (default 30000).
  --max-session-ttl-ms  the most a client may ask a detached session to be kept (initialize's
                    execBridgeSessionTtlMs; default 604800000, 7 days).
  --allow-origin    a browser Origin allowed to connect (by default any request with Origin is refused).
  --bwrap-path      bubblewrap binary for sandboxed commands (default: $BWRAP_PATH, else bwrap in
                    /usr/bin, /bin, /usr/sbin, /sbin, /usr/local/bin, /usr/local/sbin or
                    /run/current-system/sw/bin; never the server's PATH).
  --sandbox-prewarm-ms
                    after a sandboxed start, build the next sandbox like it ahead of time and keep
                    it this long for a start with the same policy and directory (default 30000;
                    0: build every sandbox on the spot).
  --exit-with-stdin stop (killing every child) when stdin reaches end of file: a parent that keeps
                    a pipe to it (the VS Code extension) takes the server along even if it crashes.
  --idle-exit-ms    stop after this long with no connection and no session (default: never).
  --verbose         log connections and sessions on stderr (never tokens).
  --spool-process-bytes
                    output one process keeps for clients that ask for it, its newest 1 MiB in
                    memory and the rest spooled to a 0600 file in the private directory
                    (default 67108864, 64 MiB; 0: no spool, only the 1 MiB window).
  --spool-total-bytes
                    spooled output of all processes of this server (default 1073741824, 1 GiB);
                    over it, the oldest bytes of the processes that finished first go first.`;

export const RUN_USAGE = `usage: exec-bridge run [--url URL | --bundled | --ssh [USER@]HOST[:PORT] [--ssh-option OPT]...]
                      [--token-file FILE] [--tty] [--cwd DIR]
                      [--sandbox read-only|workspace-write|full-access] [--sandbox-network]
                      [--sandbox-network-allow HOST[:PORT],...] [--sandbox-network-deny HOST[:PORT],...]
                      [--no-stdin] [--deadline-ms N] [--session-ttl-ms N] [--verbose] -- COMMAND [ARG]...

  Runs COMMAND on an executor through the resilient client: streams its stdout/stderr to ours,
  forwards our stdin, turns Ctrl-C into an interrupt, and exits with its exit code. A dropped
  connection is resumed (the command keeps running, no output is lost or repeated).

  --url          exec-server to use (ws:// or wss://); e.g. ours or \`codex exec-server\`.
  --bundled      start our own exec-server (loopback, random token) for this run (default without --url).
  --ssh          run on HOST over the system ssh (keys or agent; no prompts): installs this exec-server
                 under ~/.exec-bridge on HOST if that version is missing (HOST needs Node.js 20+),
                 then relays to HOST's per-user daemon; a drop resumes through a new ssh.
  --ssh-option   passed to ssh as -o OPT (repeatable), e.g. --ssh-option ProxyJump=bastion.
  --token-file   bearer token for --url (file content, trimmed; EXEC_BRIDGE_TOKEN works too).
  --tty          run in a pseudo-terminal (our terminal goes raw; the remote line discipline handles keys).
  --cwd          working directory on the executor (default: ours with --bundled, the executor's with --url).
  --sandbox      run inside the executor's sandbox (see the README's "Sandbox" section): read-only,
                 workspace-write (the working directory is the workspace) or full-access. If the
                 sandbox blocks the command, a "sandbox denied" line says so and how to re-run it.
  --sandbox-network  allow the network inside the sandbox (default: off).
  --sandbox-network-allow  managed network: only these destinations (host, *.host, IP; optional
                 :port), through the executor's proxy (HTTP_PROXY/HTTPS_PROXY/ALL_PROXY are set for
                 the command). Repeat it or separate with commas. --sandbox-network-deny wins over it.
  --no-stdin     give the command /dev/null as stdin. (The protocol cannot forward end-of-file, so a
                 command that reads stdin to its end waits forever unless it is interrupted.)
  --deadline-ms  how long to try resuming a lost connection before giving up (default 25000). 0: never
                 give up — retry (back-off up to 30 s between attempts) for as long as the executor
                 keeps the session (asked for 10 h unless --session-ttl-ms says otherwise; the
                 command keeps running there meanwhile), then fail with the executor's answer.
  --session-ttl-ms  how long the executor should keep the session and the command if the connection
                 drops (default: the executor's own, 30 s; with --deadline-ms 0: 10 h).
  --verbose      log connection details on stderr.

  Exit status: the command's; 127 if it was not found; 255 if the connection failed.`;

export const CONNECT_USAGE = `usage: exec-bridge connect [--idle-exit-ms N] [--session-ttl-ms N] [--verbose]

  Relays stdin/stdout (newline-delimited JSON, as "serve --listen stdio") to this user's exec-bridge
  daemon, starting it if none runs. Many relays share one daemon; when a relay dies only its
  connection detaches, so a client that starts a new relay resumes its session:
    ssh devbox ~/.exec-bridge/server/<version>/bin/exec-bridge connect
  --idle-exit-ms    when starting the daemon: it exits after this long with no connection and no
                    session (default 300000).
  --session-ttl-ms  when starting the daemon: how long a detached session is kept (default 30000).`;

export const DAEMON_USAGE = `usage: exec-bridge daemon [status | stop]

  The per-user executor daemon (started on demand by "exec-bridge connect"): one exec-server per
  user and version on a unix socket in the private directory, token beside it (0600).
  status  prints the running daemon's pid and socket, and each session: its client, attached or
          detached, how long it is kept once detached, and when a detached one ends (exit 1 if none)
  stop    stops it (SIGTERM: every process it runs is killed)`;

export const MCP_USAGE = `usage: exec-bridge mcp [EXECUTOR]... [--sandbox read-only|workspace-write|full-access]
                      [--sandbox-network | --sandbox-network-allow HOST[:PORT],...] [--allow-unsandboxed]
                      [--session-ttl-ms N] [--max-output-bytes N] [--verbose]
  EXECUTOR:  --bundled [--cwd DIR]
           | --url URL [--token-file FILE] [--name NAME] [--cwd DIR]
           | --ssh [USER@]HOST[:PORT] [--ssh-option OPT]... [--name NAME] [--cwd DIR]
           | --stdio 'COMMAND [ARG]...' [--name NAME] [--cwd DIR]

  An MCP server on stdin/stdout for agents outside VS Code (Codex CLI, Claude Code, any MCP
  client). Its tools run commands on an executor, sandboxed: run_command (exit code and bounded
  output, with a timeout), start_process / read_process_output / write_process_input /
  stop_process (background commands), list_executors. Register it in the agent's MCP config.

  Executors: --bundled (this user's exec-bridge daemon, started if none runs; the default when no
  executor is given), --url (any exec-server, ours or \`codex exec-server\`; the token from
  --token-file or EXEC_BRIDGE_TOKEN), --ssh (as "exec-bridge run --ssh"), --stdio (a command that
  speaks the protocol on its stdio, split at spaces). Repeat them for several; the first is the
  default, the tools' "executor" argument names another. --name, --cwd, --token-file and
  --ssh-option belong to the executor before them.
  --cwd          where commands run when the tool call names no cwd, and the sandbox's workspace
                 (default: this directory for --bundled, the executor user's home otherwise).
  --sandbox      the sandbox every command runs in (default workspace-write: the workspace, /tmp
                 and $TMPDIR are writable; network off). full-access with --sandbox-network is no
                 sandbox at all.
  --sandbox-network        allow the network inside the sandbox.
  --sandbox-network-allow  only these destinations (host, *.host, IP; optional :port), through the
                 executor's proxy. Repeat it or separate with commas.
  --allow-unsandboxed      honour "unsandboxed": true in a tool call (the agent asks for it after a
                 denial, when the user allowed it). Without it such calls are refused.
  --session-ttl-ms  how long the executor keeps this server's commands after the connection drops
                 (default 60000): a drop within it is resumed; a server killed outright leaves
                 nothing running for longer than that. Closing stdin stops every command at once.
  --max-output-bytes  output one tool answer carries, head and tail (default 16384; 1024 to 1048576).
  --verbose      log connection details on stderr.

  Exit status: 0 when stdin closes, 2 on a usage error.`;

export const MCP_PROXY_USAGE = `usage: exec-bridge mcp-proxy SOCKET SERVER

  What VS Code's MCP list runs for a server that Exec Bridge manages (the extension writes this
  command into the definitions it offers; you do not run it yourself). It joins its stdin/stdout to
  the extension's local socket, where the running server answers: one server process on its
  executor, whether Exec Bridge's tree or VS Code's chat uses it. It ends when either side does.`;
