/**
 * Shared mode over HTTP/2: an unauthenticated client keeps no connection open, as at the
 * apiserver. The apiserver answers an anonymous request, or refuses a token with its 401, then
 * closes the h2 connection with a GOAWAY (k8s.io/apiserver pkg/endpoints/filters/authentication.go,
 * the UnauthenticatedHTTP2DOSMitigation gate, on since 1.29); an authenticated client's connection
 * stays open. The proxy must answer the same and close the same connections.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:http2';
import { test } from 'node:test';
import { useSharedAdmin, upstreamConfigFor } from '../../helpers/control-plane.ts';
import { startSharedProxy } from '../../helpers/shared-proxy.ts';

const shared = useSharedAdmin();

/** The status of one request on a connection of its own, and whether the server then sent a GOAWAY. */
async function askOnce(url: string, headers: Readonly<Record<string, string>>): Promise<{ status: number; goaway: boolean }> {
  const session = connect(url, { ca: readFileSync(shared.cp.caFile, 'utf8') });
  session.on('error', () => undefined);
  const seen = { goaway: false };
  session.on('goaway', () => (seen.goaway = true));
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':path': '/api/v1/namespaces?limit=1', ...headers });
      let code = 0;
      stream.on('response', (head) => (code = Number(head[':status'])));
      stream.on('error', reject);
      stream.resume();
      stream.on('end', () => {
        resolve(code);
      });
      stream.end();
    });
    // The GOAWAY comes with the answer or before it ends; a PING's answer comes after both.
    await new Promise<void>((resolve) => {
      if (
        session.closed ||
        !session.ping(() => {
          resolve();
        })
      )
        resolve();
    });
    return { status, goaway: seen.goaway || session.closed };
  } finally {
    session.destroy();
  }
}

test(
  'shared mode over h2: anonymous and 401 answers close the connection, as the apiserver’s; an authenticated one’s stays open',
  { timeout: 120_000 },
  async (t) => {
    const proxy = await startSharedProxy(t, shared.cp, ['--resources', 'configmaps']);
    const token = (await (await upstreamConfigFor(shared.cp)).authorization()) ?? assert.fail('the admin has a token');
    const clients: readonly (readonly [string, Record<string, string>])[] = [
      ['anonymous', {}],
      ['a token the apiserver refuses', { authorization: 'Bearer not-a-token' }],
      ['the admin', { authorization: token }],
    ];
    for (const [who, headers] of clients) {
      const apiserver = await askOnce(shared.cp.server, headers);
      const viaProxy = await askOnce(proxy.url, headers);
      assert.deepEqual(viaProxy, apiserver, who);
      t.diagnostic(`${who}: ${String(apiserver.status)}, ${apiserver.goaway ? 'GOAWAY' : 'kept open'}`);
    }
  },
);
