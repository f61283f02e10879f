import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import {
  checkElicitPicks,
  clientCapabilities,
  elicitFields,
  parseElicitValue,
  pickModel,
  requiredUrlElicitations,
} from '../../../src/mcp/clientFeatures';
import { McpError, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { toolItem } from '../../../src/mcp/treeModel';

const decline = () => Promise.resolve({ action: 'decline' as const });

test('elicitation announces URL mode only with a URL handler', () => {
  assert.deepEqual(clientCapabilities({ elicit: decline }).elicitation, { form: {} });
  assert.deepEqual(clientCapabilities({ elicit: decline, elicitUrl: decline }).elicitation, { form: {}, url: {} });
});

test('elicitation forms: multi-select arrays (items.enum, items.anyOf) with bounds; string length bounds', () => {
  const params = {
    mode: 'form',
    message: 'm',
    requestedSchema: {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 2, default: ['a'] },
        colors: {
          type: 'array',
          items: {
            anyOf: [
              { const: 'r', title: 'Red' },
              { const: 'g', title: 'Green' },
            ],
          },
        },
        code: { type: 'string', minLength: 2, maxLength: 4 },
      },
      required: ['tags'],
    },
  } as unknown as ElicitRequestFormParams;
  const [tags, colors, code] = elicitFields(params);
  assert.equal(tags!.kind, 'multi');
  assert.deepEqual(tags!.options, [
    { value: 'a', label: 'a' },
    { value: 'b', label: 'b' },
    { value: 'c', label: 'c' },
  ]);
  assert.deepEqual(tags!.default, ['a']);
  assert.deepEqual([tags!.minLength, tags!.maxLength], [1, 2]);
  assert.deepEqual(colors!.options, [
    { value: 'r', label: 'Red' },
    { value: 'g', label: 'Green' },
  ]);
  assert.deepEqual(checkElicitPicks(tags!, []), { error: 'tags is required' });
  assert.deepEqual(checkElicitPicks(tags!, ['a', 'b', 'c']), { error: 'pick at most 2' });
  assert.deepEqual(checkElicitPicks(tags!, ['b']), ['b']);
  assert.deepEqual(checkElicitPicks(colors!, []), []);
  assert.deepEqual(parseElicitValue(code!, 'x'), { error: 'at least 2 characters' });
  assert.deepEqual(parseElicitValue(code!, 'toolong'), { error: 'at most 4 characters' });
  assert.equal(parseElicitValue(code!, 'abc'), 'abc');
});

test("sampling picks the model the server's hints name (in order), else the first", () => {
  const models = [
    { id: 'gpt-4o', name: 'GPT-4o', family: 'gpt-4o' },
    { id: 'claude-sonnet-4', name: 'Claude Sonnet 4', family: 'claude-sonnet' },
  ];
  assert.equal(pickModel(models, [{ name: 'sonnet' }])?.id, 'claude-sonnet-4');
  assert.equal(pickModel(models, [{ name: 'gemini' }, { name: 'GPT' }])?.id, 'gpt-4o');
  assert.equal(pickModel(models, [{ name: 'gemini' }])?.id, 'gpt-4o');
  assert.equal(pickModel(models, undefined)?.id, 'gpt-4o');
  assert.equal(pickModel([], [{ name: 'x' }]), undefined);
});

test("a tool's tooltip has its behaviour hints and its output schema", () => {
  const item = toolItem({
    name: 'get_weather',
    title: 'Weather',
    description: 'Current weather',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object', properties: { celsius: { type: 'number' } } },
    annotations: { readOnlyHint: true, openWorldHint: true },
  });
  assert.match(item.tooltip ?? '', /_read-only · reaches outside systems_/);
  assert.match(item.tooltip ?? '', /Output schema \(the result has `structuredContent`\)/);
  assert.match(item.tooltip ?? '', /"celsius"/);
  const plain = toolItem({ name: 'x', inputSchema: { type: 'object' } });
  assert.doesNotMatch(plain.tooltip ?? '', /Output schema|read-only/);
});

test('"URL elicitation required" (-32042): its http(s) pages; nothing for other errors', () => {
  const page = { mode: 'url' as const, url: 'https://example.com/a', message: 'Sign in', elicitationId: 'e1' };
  const err = new UrlElicitationRequiredError([page, { ...page, url: 'file:///etc/passwd', elicitationId: 'e2' }]);
  assert.deepEqual(requiredUrlElicitations(err), [page]);
  assert.equal(requiredUrlElicitations(new UrlElicitationRequiredError([{ ...page, url: 'javascript:alert(1)' }])), undefined);
  assert.equal(requiredUrlElicitations(new McpError(-32602, 'bad params', { elicitations: [page] })), undefined);
  assert.equal(requiredUrlElicitations(new Error('x')), undefined);
});
