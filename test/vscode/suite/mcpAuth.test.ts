// Sign-in to a remote MCP server in a real VS Code: a local OAuth authorization server + MCP
// resource server on loopback (test/helpers/oauthTestServer.ts, the SDK's auth router), an `http`
// server in `execBridge.mcp.servers`. Start says sign-in required (inline "Sign In…" in the
// tree); the Sign In… command opens the authorization page — taken over through the extension's
// `onWillOpenSignInPage` seam, a fetch-driven "browser" follows it back to the loopback redirect
// — and the tree shows "signed in as …"; Call Tool answers as that account; Sign Out deletes the
// SecretStorage entry, stops the server and revokes the tokens at the authorization server. No token, code or secret reaches the output channel.
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { suite, suiteSetup, suiteTeardown, test } from 'mocha';
import * as vscode from 'vscode';
import type { SignInPage } from '../../../src/vscode/api';
import { followRedirects, startOAuthTestServer, type OAuthTestServer } from '../../helpers/oauthTestServer';
import { findFiles, getApi, waitFor, withSettings } from './helpers';

interface SnapshotNode {
  label: string;
  description?: string;
  contextValue: string;
}
interface Snapshot {
  tree: SnapshotNode[];
  servers: { name: string; state: { kind: string }; auth: { kind: string; account?: string }; signInStored: boolean }[];
}

const NAME = `signin-${process.pid}`;

async function snapshot(): Promise<Snapshot> {
  return await vscode.commands.executeCommand<Snapshot>('execBridge.mcp.snapshot');
}

async function waitForServer(what: string, check: (s: Snapshot['servers'][number], row: SnapshotNode | undefined) => boolean) {
  const deadline = Date.now() + 30_000;
  let last: Snapshot | undefined;
  for (;;) {
    last = await snapshot();
    const s = last.servers.find((x) => x.name === NAME);
    const row = last.tree.find((n) => n.label === NAME);
    if (s && check(s, row)) return { server: s, row };
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; server: ${JSON.stringify(s)}, row: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

suite('MCP sign-in (OAuth) to a remote server', function () {
  this.timeout(120_000);
  let as: OAuthTestServer;
  let undo: (() => Promise<void>) | undefined;
  let sub: vscode.Disposable | undefined;
  const pages: SignInPage[] = [];
  const browsing: Promise<void>[] = [];

  suiteSetup(async () => {
    const api = await getApi();
    as = await startOAuthTestServer({ account: 'vscode-user@example.test' });
    // The seam: the page is ours to open (a real user's browser would follow the same redirects).
    sub = api.onWillOpenSignInPage((page) => {
      page.claim();
      pages.push(page);
      browsing.push(followRedirects(new URL(page.url)));
    });
    undo = await withSettings({ 'mcp.servers': { [NAME]: { type: 'http', url: as.url } } });
  });

  suiteTeardown(async () => {
    sub?.dispose();
    await undo?.();
    await as?.close();
  });

  test('Start → sign-in required; Sign In… → signed in as the account, Call Tool works; Sign Out clears the stored entry', async () => {
    const api = await getApi();
    await waitForServer('the server in the tree', () => true);

    await vscode.commands.executeCommand('execBridge.mcp.start', NAME);
    const needs = await waitForServer('sign-in required', (s) => s.state.kind === 'stopped' && s.auth.kind === 'signInRequired');
    assert.match(needs.row?.description ?? '', /sign-in required/);
    assert.match(needs.row?.contextValue ?? '', /;needsSignIn;/, 'the inline Sign In… action is offered');
    assert.equal(pages.length, 0, 'a start opens no page');

    await vscode.commands.executeCommand('execBridge.mcp.signIn', NAME);
    assert.equal(pages.length, 1, 'Sign In… opened the authorization page once');
    assert.equal(pages[0]!.server, NAME);
    const page = new URL(pages[0]!.url);
    assert.equal(page.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(page.searchParams.get('resource'), as.url);
    await Promise.all(browsing);
    const signedIn = await waitForServer('ready and signed in', (s) => s.state.kind === 'ready' && s.auth.kind === 'signedIn');
    assert.equal(signedIn.server.auth.account, as.account);
    assert.match(signedIn.row?.description ?? '', new RegExp(`signed in as ${as.account.replace(/\./g, '\\.')}`));
    assert.match(signedIn.row?.contextValue ?? '', /;canSignOut;/);
    assert.equal(signedIn.server.signInStored, true, 'the sign-in is in SecretStorage');

    const result = await vscode.commands.executeCommand<{ content: { text: string }[] }>(
      'execBridge.mcp.callTool',
      { kind: 'tool', id: `mcp:${NAME}/tools/whoami`, server: NAME, name: 'whoami' },
      {},
    );
    assert.equal(result.content[0]?.text, as.account);

    await vscode.commands.executeCommand('execBridge.mcp.signOut', NAME);
    const out = await waitForServer('signed out', (s) => s.state.kind === 'stopped' && s.auth.kind === 'none');
    assert.equal(out.server.signInStored, false, 'Sign Out deleted the SecretStorage entry');
    assert.deepEqual(
      as.revocations().map((r) => r.named),
      ['refresh', 'access'],
      'Sign Out revoked both tokens at the authorization server',
    );
    assert.doesNotMatch(out.row?.contextValue ?? '', /;canSignOut;/);

    // The server's output channel says who signed in, and never a secret.
    const channel = await waitFor(
      'the output channel file',
      () => {
        const text = findFiles(api.logUri.fsPath, new RegExp(`${NAME}.*\\.log$`))
          .map((f) => readFileSync(f, 'utf8'))
          .join('\n');
        return /signed out/.test(text) ? text : undefined;
      },
      15_000,
    );
    assert.match(channel, /signed in as vscode-user@example\.test/);
    assert.ok(as.secrets().length >= 3);
    for (const secret of as.secrets()) assert.ok(!channel.includes(secret), 'no token, code or secret in the output channel');
  });
});
