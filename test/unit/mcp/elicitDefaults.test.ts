import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import { checkElicitPicks, elicitChoices, elicitFields } from '../../../src/mcp/clientFeatures';

/** The SEP-1034 form (a default for every primitive type) and the SEP-1330 enum shapes, all optional but `pick`. */
const form = {
  mode: 'form',
  message: 'm',
  requestedSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', default: 'John Doe' },
      age: { type: 'integer', default: 30 },
      status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'inactive' },
      titled: {
        type: 'string',
        oneOf: [
          { const: 'v1', title: 'First' },
          { const: 'v2', title: 'Second' },
        ],
        default: 'v2',
      },
      verified: { type: 'boolean', default: false },
      plain: { type: 'string', enum: ['a', 'b'] },
      pick: { type: 'string', enum: ['x', 'y'] },
      tags: { type: 'array', items: { type: 'string', enum: ['t1', 't2'] }, minItems: 1 },
    },
    required: ['pick'],
  },
} as unknown as ElicitRequestFormParams;

const fields = Object.fromEntries(elicitFields(form).map((f) => [f.key, f]));
const activeOf = (key: string) => {
  const { items, active } = elicitChoices(fields[key]!);
  return items[active]!;
};

test('Enter on an enum, oneOf or boolean field takes its default, not the first option', () => {
  assert.equal(activeOf('status').value, 'inactive');
  assert.equal(activeOf('titled').value, 'v2');
  assert.equal(activeOf('titled').label, 'Second');
  assert.equal(activeOf('verified').value, false);
  assert.equal(activeOf('verified').label, 'No');
  assert.deepEqual([fields['name']!.default, fields['age']!.default], ['John Doe', 30]);
});

test('an optional single-choice field can be left out; without a default Enter leaves it out; a required one cannot', () => {
  const plain = elicitChoices(fields['plain']!);
  assert.deepEqual(
    plain.items.map((i) => i.label),
    ['a', 'b', '(leave out)'],
  );
  assert.equal(plain.items[plain.active]!.leaveOut, true);
  assert.equal(plain.items[plain.active]!.value, undefined);
  const pick = elicitChoices(fields['pick']!);
  assert.ok(!pick.items.some((i) => i.leaveOut));
  assert.equal(pick.items[pick.active]!.value, 'x');
  // A field with a default still offers leaving it out.
  assert.ok(elicitChoices(fields['status']!).items.some((i) => i.leaveOut));
});

test('an optional multi-select with minItems can be left empty (left out); a non-empty pick is still bounded', () => {
  assert.deepEqual(checkElicitPicks(fields['tags']!, []), []);
  assert.deepEqual(checkElicitPicks(fields['tags']!, ['t2']), ['t2']);
  const required = { ...fields['tags']!, required: true };
  assert.deepEqual(checkElicitPicks(required, []), { error: 'tags is required' });
  const two = { ...fields['tags']!, minLength: 2 };
  assert.deepEqual(checkElicitPicks(two, ['t1']), { error: 'pick at least 2' });
});
