// Placeholder entry until `serve` and `run` land.
process.stderr.write('exec-bridge: usage: exec-bridge serve|run …\n');
process.exit(2);
