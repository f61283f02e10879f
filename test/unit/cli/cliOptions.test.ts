import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyOptions, HelpRequested, help, listValue, UsageError, type OptionTable } from '../../../src/cli/cliOptions';

interface Seen {
  log: string[];
}

const TABLE: OptionTable<Seen> = {
  '--flag': (s, _value, flag) => s.log.push(flag),
  '--take': (s, value, flag) => s.log.push(`${flag}:${value()}`),
  '-h': help,
};

function run(args: string[], operands: boolean): { log: string[]; rest: string[] } {
  const s: Seen = { log: [] };
  const rest = applyOptions(args, TABLE, s, operands);
  return { log: s.log, rest };
}

test('applyOptions: options in order, a value as the next argument or after =, a switch takes none', () => {
  assert.deepEqual(run(['--take', 'a', '--flag', '--take=b=c', '--take', '--flag', '--flag=x'], false), {
    log: ['--take:a', '--flag', '--take:b=c', '--take:--flag', '--flag'],
    rest: [],
  });
});

test('applyOptions: with operands, `--` or the first word that is no option ends the options', () => {
  assert.deepEqual(run(['--flag', 'ls', '--take', 'x'], true), { log: ['--flag'], rest: ['ls', '--take', 'x'] });
  assert.deepEqual(run(['--', '--flag'], true), { log: [], rest: ['--flag'] });
  assert.throws(
    () => run(['ls'], false),
    (e: Error) => e instanceof UsageError && e.message === 'unknown option ls',
  );
  assert.throws(
    () => run(['--'], false),
    (e: Error) => e instanceof UsageError && e.message === 'unknown option --',
  );
});

test('applyOptions: unknown names (inherited ones too) and missing values are usage errors', () => {
  for (const [args, message] of [
    [['--nope=1'], 'unknown option --nope=1'],
    [['constructor'], 'unknown option constructor'],
    [['__proto__'], 'unknown option __proto__'],
    [['--toString'], 'unknown option --toString'],
    [['--flag', '--take'], '--take needs a value'],
    [['-take=x'], 'unknown option -take=x'],
  ] as const)
    assert.throws(
      () => run([...args], false),
      (e: Error) => e instanceof UsageError && e.message === message,
      args.join(' '),
    );
  assert.throws(() => run(['--flag', '-h', '--nope'], false), HelpRequested);
});

test('listValue: comma-separated, trimmed, empty items dropped', () => {
  assert.deepEqual(listValue(' a.com, *.b.org ,,c:443 '), ['a.com', '*.b.org', 'c:443']);
  assert.deepEqual(listValue(' , '), []);
});
