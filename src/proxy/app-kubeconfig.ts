/**
 * The kubeconfig the proxy writes for apps (`--write-kubeconfig`): with `KUBECONFIG` pointing at
 * it, client-go, @kubernetes/client-node, kubectl and Python's kubernetes client talk to the
 * proxy over HTTPS with no flag that weakens TLS. It names the proxy's URL and the CA to trust,
 * and no credentials: in sidecar mode the proxy talks to the apiserver as itself.
 *
 * Written as JSON (YAML's subset, which every client's loader reads), and replaced atomically
 * (a temporary file in the same directory, then rename(2)), so an app in another container that
 * reads it while the proxy (re)starts sees the old file or the new one, never half of one.
 */
import { chmodSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** The name of the kubeconfig's cluster, user and context. */
export const APP_KUBECONFIG_NAME = 'kube-cache-proxy';

/**
 * The user's token: a placeholder, no credential. kubectl asks for a username and a password on
 * stdin (failing with EOF where there is none, as in a container) when an HTTPS cluster's user
 * has nothing that identifies it (clientcmd's canIdentifyUser); the proxy in sidecar mode drops
 * every client's Authorization header and sends its own (server/pass-through/pass-through.ts), so this value
 * never leaves the pod and grants nothing.
 */
export const SIDECAR_PLACEHOLDER_TOKEN = 'kube-cache-proxy-sidecar-no-credentials';

export interface AppKubeconfigOptions {
  /** The proxy's base URL: `https://127.0.0.1:8001`. */
  readonly server: string;
  /** The CA that signs the proxy's certificate, PEM. */
  readonly ca: string;
  /** The context's namespace (the proxy's --namespace); undefined: the client's default. */
  readonly namespace?: string | undefined;
}

/** The kubeconfig's text (clientcmd's v1 Config). */
export function appKubeconfig(options: AppKubeconfigOptions): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: APP_KUBECONFIG_NAME,
        cluster: { server: options.server, 'certificate-authority-data': Buffer.from(options.ca).toString('base64') },
      },
    ],
    users: [{ name: APP_KUBECONFIG_NAME, user: { token: SIDECAR_PLACEHOLDER_TOKEN } }],
    contexts: [
      {
        name: APP_KUBECONFIG_NAME,
        context: {
          cluster: APP_KUBECONFIG_NAME,
          user: APP_KUBECONFIG_NAME,
          ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
        },
      },
    ],
    'current-context': APP_KUBECONFIG_NAME,
    preferences: {},
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/**
 * Writes `text` to `path` atomically, readable by everyone (0644: other containers sharing the
 * volume run as other users, and nothing in it is secret).
 */
export function writeFileAtomically(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${String(process.pid)}.tmp`);
  try {
    writeFileSync(temporary, text, { mode: 0o644 });
    // The umask may have taken bits off the mode.
    chmodSync(temporary, 0o644);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
