/**
 * A stdio MCP server with what the official conformance suite's server scenarios call for (not a
 * test file; mcpConformanceServer.test.ts runs the suite against it through our gateway). Written
 * here from the scenarios' stated requirements (`conformance list`, each scenario's description):
 * tools returning each content type, logging and progress during a call, an error result, sampling
 * and elicitation requests (form, with defaults, and every enum shape), a JSON Schema 2020-12 input
 * schema; static and templated resources with subscriptions; prompts with arguments, an embedded
 * resource and an image; completions; logging levels.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A WAV header with no samples. */
const WAV = Buffer.from(
  'RIFF$\u0000\u0000\u0000WAVEfmt \u0010\u0000\u0000\u0000\u0001\u0000\u0001\u0000D\u00ac\u0000\u0000\u0088X\u0001\u0000\u0002\u0000\u0010\u0000data\u0000\u0000\u0000\u0000',
  'latin1',
).toString('base64');

const none = { type: 'object' as const, properties: {} };
const tools: Tool[] = [
  { name: 'test_simple_text', description: 'Answers with one text', inputSchema: none },
  { name: 'test_image_content', description: 'Answers with an image', inputSchema: none },
  { name: 'test_audio_content', description: 'Answers with audio', inputSchema: none },
  { name: 'test_embedded_resource', description: 'Answers with an embedded resource', inputSchema: none },
  { name: 'test_multiple_content_types', description: 'Answers with text, an image and a resource', inputSchema: none },
  { name: 'test_tool_with_logging', description: 'Logs three messages while it runs', inputSchema: none },
  { name: 'test_error_handling', description: 'Always fails', inputSchema: none },
  { name: 'test_tool_with_progress', description: 'Reports progress while it runs', inputSchema: none },
  {
    name: 'test_sampling',
    description: "Asks the client's model",
    inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
  },
  {
    name: 'test_elicitation',
    description: 'Asks the user',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  },
  { name: 'test_elicitation_sep1034_defaults', description: 'Asks with a default for every field type', inputSchema: none },
  { name: 'test_elicitation_sep1330_enums', description: 'Asks with every enum shape', inputSchema: none },
  // Ours (not the suite's): defaults that are not the first option, and an optional multi-select with minItems.
  { name: 'ask_with_defaults', description: 'Asks with defaults that are not the first option', inputSchema: none },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    } as Tool['inputSchema'],
  },
];

const server = new Server(
  { name: 'exec-bridge-conformance-fixture', version: '1.0.0' },
  { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
);
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const textResult = (text: string): CallToolResult => ({ content: [{ type: 'text', text }] });
const subscribed = new Set<string>();

server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const args = req.params.arguments ?? {};
  switch (req.params.name) {
    case 'test_simple_text':
      return textResult('This is a simple text response for testing.');
    case 'test_image_content':
      return { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] };
    case 'test_audio_content':
      return { content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] };
    case 'test_embedded_resource':
      return {
        content: [
          {
            type: 'resource',
            resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
          },
        ],
      };
    case 'test_multiple_content_types':
      return {
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: PNG, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: {
              uri: 'test://mixed-content-resource',
              mimeType: 'application/json',
              text: JSON.stringify({ test: 'data', value: 123 }),
            },
          },
        ],
      };
    case 'test_tool_with_logging':
      for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (i > 0) await wait(50);
        await server.sendLoggingMessage({ level: 'info', data });
      }
      return textResult('Tool with logging executed successfully');
    case 'test_error_handling':
      return { isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] };
    case 'test_tool_with_progress': {
      const token = req.params._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i > 0) await wait(50);
        if (token !== undefined)
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
      }
      return textResult('Tool with progress executed successfully');
    }
    case 'test_sampling': {
      const r = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: String(args['prompt']) } }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      const content = Array.isArray(r.content) ? r.content[0] : r.content;
      return textResult(`LLM response: ${content?.type === 'text' ? content.text : `[${content?.type}]`}`);
    }
    case 'test_elicitation': {
      const r = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: {
            message: String(args['message']),
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" },
              },
              required: ['username', 'email'],
            },
          },
        },
        ElicitResultSchema,
      );
      return textResult(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case 'test_elicitation_sep1034_defaults':
    case 'test_elicitation_sep1330_enums':
    case 'ask_with_defaults': {
      const properties =
        req.params.name === 'ask_with_defaults'
          ? {
              status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'pending' },
              verified: { type: 'boolean', default: false },
              tier: {
                type: 'string',
                oneOf: [
                  { const: 'free', title: 'Free' },
                  { const: 'pro', title: 'Pro' },
                ],
                default: 'pro',
              },
              tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1 },
            }
          : req.params.name === 'test_elicitation_sep1034_defaults'
            ? {
                name: { type: 'string', description: 'User name', default: 'John Doe' },
                age: { type: 'integer', description: 'User age', default: 30 },
                score: { type: 'number', description: 'User score', default: 95.5 },
                status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
                verified: { type: 'boolean', description: 'Verification status', default: true },
              }
            : {
                untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
                titledSingle: {
                  type: 'string',
                  oneOf: [
                    { const: 'value1', title: 'First Option' },
                    { const: 'value2', title: 'Second Option' },
                    { const: 'value3', title: 'Third Option' },
                  ],
                },
                legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
                untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
                titledMulti: {
                  type: 'array',
                  items: {
                    anyOf: [
                      { const: 'value1', title: 'First Choice' },
                      { const: 'value2', title: 'Second Choice' },
                      { const: 'value3', title: 'Third Choice' },
                    ],
                  },
                },
              };
      const r = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: 'Please answer', requestedSchema: { type: 'object', properties, required: [] } },
        },
        ElicitResultSchema,
      );
      return textResult(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    default:
      throw new Error(`no tool ${req.params.name}`);
  }
});

const resources = [
  { uri: 'test://static-text', name: 'static-text', description: 'A static text resource', mimeType: 'text/plain' },
  { uri: 'test://static-binary', name: 'static-binary', description: 'A static binary resource', mimeType: 'image/png' },
  { uri: 'test://watched-resource', name: 'watched-resource', description: 'A resource to subscribe to', mimeType: 'text/plain' },
];
server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources }));
server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
  resourceTemplates: [
    { uriTemplate: 'test://template/{id}/data', name: 'template', description: 'Data by id', mimeType: 'application/json' },
  ],
}));
server.setRequestHandler(ReadResourceRequestSchema, (req) => {
  const uri = req.params.uri;
  if (uri === 'test://static-text')
    return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
  if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: PNG }] };
  if (uri === 'test://watched-resource') return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched.' }] };
  const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (m)
    return {
      contents: [
        { uri, mimeType: 'application/json', text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) },
      ],
    };
  throw new Error(`no resource ${uri}`);
});
server.setRequestHandler(SubscribeRequestSchema, (req) => {
  subscribed.add(req.params.uri);
  // Tell the subscriber at once, so a client can see updates arrive.
  setTimeout(() => {
    if (subscribed.has(req.params.uri)) void server.sendResourceUpdated({ uri: req.params.uri }).catch(() => undefined);
  }, 20);
  return {};
});
server.setRequestHandler(UnsubscribeRequestSchema, (req) => {
  subscribed.delete(req.params.uri);
  return {};
});

server.setRequestHandler(ListPromptsRequestSchema, () => ({
  prompts: [
    { name: 'test_simple_prompt', description: 'A prompt without arguments' },
    {
      name: 'test_prompt_with_arguments',
      description: 'A prompt with two arguments',
      arguments: [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    },
    {
      name: 'test_prompt_with_embedded_resource',
      description: 'A prompt embedding a resource',
      arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    },
    { name: 'test_prompt_with_image', description: 'A prompt with an image' },
  ],
}));
server.setRequestHandler(GetPromptRequestSchema, (req) => {
  const a = req.params.arguments ?? {};
  switch (req.params.name) {
    case 'test_simple_prompt':
      return { messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] };
    case 'test_prompt_with_arguments':
      return {
        messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${a['arg1']}', arg2='${a['arg2']}'` } }],
      };
    case 'test_prompt_with_embedded_resource':
      return {
        messages: [
          {
            role: 'user',
            content: {
              type: 'resource',
              resource: { uri: String(a['resourceUri']), mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
            },
          },
          { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
        ],
      };
    case 'test_prompt_with_image':
      return {
        messages: [
          { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
          { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
        ],
      };
    default:
      throw new Error(`no prompt ${req.params.name}`);
  }
});
server.setRequestHandler(CompleteRequestSchema, (req) => {
  const value = req.params.argument.value;
  const values = ['paris', 'park', 'party', 'test', 'testing'].filter((v) => v.startsWith(value));
  return { completion: { values, total: values.length, hasMore: false } };
});

void server.connect(new StdioServerTransport());
