import * as vscode from 'vscode';
import { isSignInRequired, type McpAuthHooks, type McpAuthStore, type McpServer } from '../mcp';
import { errorMessage } from '../util';
import type { SignInPage } from './api';

/**
 * Sign-in to remote MCP servers in VS Code: sign-ins live in SecretStorage (one entry per server),
 * the authorization page opens with `env.openExternal` (the loopback redirect made reachable from
 * the browser with `env.asExternalUri`), and `onWillOpenSignInPage` lets an extension — our
 * tests, or one that shows such pages itself — take the page over instead of the browser.
 */
export class McpSignIn implements vscode.Disposable {
  private readonly pages = new vscode.EventEmitter<SignInPage>();
  /** Fired before the browser opens; a listener that calls `claim()` opens the page itself. */
  readonly onWillOpenSignInPage = this.pages.event;

  constructor(private readonly secrets: vscode.SecretStorage) {}

  hooks(): McpAuthHooks {
    const secrets = this.secrets;
    const store: McpAuthStore = {
      get: (key) => Promise.resolve(secrets.get(key)),
      set: (key, value) => Promise.resolve(secrets.store(key, value)),
      delete: (key) => Promise.resolve(secrets.delete(key)),
    };
    return {
      store,
      openBrowser: async (server, url) => {
        let claimed = false;
        this.pages.fire({ server, url: url.href, claim: () => (claimed = true) });
        if (claimed) return;
        if (!(await vscode.env.openExternal(vscode.Uri.parse(url.href)))) throw new Error('the sign-in page was not opened in the browser');
      },
      // Where the browser is not on this machine (a web or remote window), VS Code forwards the port.
      externalRedirect: async (u) =>
        vscode.env.uiKind === vscode.UIKind.Web || vscode.env.remoteName
          ? new URL((await vscode.env.asExternalUri(vscode.Uri.parse(u.href))).toString(true))
          : u,
    };
  }

  dispose(): void {
    this.pages.dispose();
  }
}

/** "Sign In…": the browser step under a cancellable notification, then the server starts (or goes on). */
export async function signInToServer(server: McpServer): Promise<void> {
  try {
    await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Signing in to MCP server "${server.name}": finish in the browser…`,
        cancellable: true,
      },
      (_progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort(new Error('the sign-in was cancelled')));
        return server.signIn(abort.signal);
      },
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`Exec Bridge: signing in to "${server.name}" failed: ${errorMessage(e)}`);
    return;
  }
  const st = server.auth.status;
  const who = st.kind === 'signedIn' ? (st.account ?? (st.authServer ? `at ${st.authServer}` : undefined)) : undefined;
  void vscode.window.showInformationMessage(`Exec Bridge: signed in to "${server.name}"${who ? ` as ${who}` : ''}.`);
}

export async function signOutOfServer(server: McpServer): Promise<void> {
  await server.signOut();
  void vscode.window.showInformationMessage(`Exec Bridge: signed out of "${server.name}"; its stored sign-in is deleted.`);
}

/**
 * A call that needs a (new) sign-in — the server asks for more access (403 insufficient_scope) or
 * its grant ended — offers Sign In…, then calls again once.
 */
export async function withSignIn<T>(server: McpServer, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (e) {
    if (!isSignInRequired(e)) throw e;
    const pick = await vscode.window.showQuickPick(['Sign In…', 'Cancel'], {
      title: `${server.name}: ${e.scope ? `the server asks for more access (scope "${e.scope}")` : 'the server asks you to sign in'}`,
      ignoreFocusOut: true,
    });
    if (pick !== 'Sign In…') return undefined;
    await signInToServer(server);
    if (server.auth.status.kind !== 'signedIn') return undefined;
    return call();
  }
}

/** A start that stopped for a sign-in: says so with a Sign In… button (not waited for: the start is over). */
export function offerSignIn(server: McpServer): void {
  const st = server.auth.status;
  const where = st.kind === 'signInRequired' && st.authServer ? ` at ${st.authServer}` : '';
  void vscode.window
    .showInformationMessage(`Exec Bridge: MCP server "${server.name}" needs you to sign in${where}.`, 'Sign In…')
    .then((choice) => (choice ? signInToServer(server) : undefined));
}
