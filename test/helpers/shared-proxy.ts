/**
 * A proxy in shared mode, started as an operator starts one (the `kube-cache-proxy proxy`
 * command, in a process of its own, with its logs kept for the test to read): HTTPS with a
 * serving certificate of the control plane's CA, client certificates of that CA accepted
 * (--client-ca-file, as the apiserver's), and the admin kubeconfig as its own identity.
 *
 * Clients reach it as they reach the apiserver: `clientFor` makes an undici Agent that trusts the
 * CA and presents a token, a client certificate, or nothing.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import type { RunningCli } from './cli.ts';
import { spawnCli } from './cli.ts';
import { signedCertificate } from './certificates.ts';
import type { SignedCertificate } from './certificates.ts';
import { eventually } from './eventually.ts';

export interface SharedProxy {
  /** https://127.0.0.1:PORT */
  readonly url: string;
  /** The CA its serving certificate chains to (the control plane's), PEM. */
  readonly ca: string;
  readonly cli: RunningCli;
}

/** Starts it with `args` added (e.g. --resources), and waits for its caches to sync. */
export async function startSharedProxy(
  t: { after(fn: () => void | Promise<void>): void },
  cp: ControlPlaneState,
  args: readonly string[],
): Promise<SharedProxy> {
  const serving = signedCertificate(t, cp, { cn: 'kube-cache-proxy', serving: true });
  const cli = spawnCli([
    'proxy',
    '--kubeconfig',
    cp.kubeconfig,
    '--port',
    '0',
    '--shared',
    '--tls-cert-file',
    serving.certFile,
    '--tls-private-key-file',
    serving.keyFile,
    '--client-ca-file',
    cp.caFile,
    ...args,
  ]);
  t.after(async () => {
    cli.child.kill('SIGTERM');
    await cli.exited;
  });
  await eventually('the shared proxy to serve', () => /Starting to serve on \S+/.test(cli.output()) || cli.child.exitCode !== null, 30_000);
  const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1];
  if (address === undefined) throw new Error(`the shared proxy did not start:\n${cli.output()}`);
  const ca = readFileSync(cp.caFile, 'utf8');
  const url = `https://${address}`;
  // Its own health needs no credentials (as the apiserver's /readyz for anonymous users).
  const probe = clientFor(t, ca, { kind: 'anonymous' });
  await eventually(
    'the shared proxy to be ready',
    async () => {
      const res = await request(`${url}/readyz`, { dispatcher: probe.dispatcher });
      await res.body.dump();
      return res.statusCode === 200;
    },
    60_000,
  );
  return { url, ca, cli };
}

/** How a client proves who it is: a bearer token, a client certificate, or nothing at all. */
export type Credentials =
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'certificate'; readonly certificate: SignedCertificate }
  | { readonly kind: 'anonymous' };

export interface Client {
  readonly dispatcher: Agent;
  /** The headers that carry the credentials (none for a certificate: the connection does). */
  readonly headers: Readonly<Record<string, string>>;
}

/** A client of `ca`-trusting HTTPS with `credentials`, closed when `t` ends. */
export function clientFor(t: { after(fn: () => void | Promise<void>): void }, ca: string, credentials: Credentials): Client {
  const certificate = credentials.kind === 'certificate' ? { cert: credentials.certificate.cert, key: credentials.certificate.key } : {};
  const dispatcher = new Agent({ connect: { ca, ...certificate } });
  t.after(() => dispatcher.close());
  return { dispatcher, headers: credentials.kind === 'token' ? { authorization: `Bearer ${credentials.token}` } : {} };
}
