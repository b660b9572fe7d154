/**
 * The headers a passed-through request carries upstream, by whose identity it goes as: the
 * proxy's (sidecar mode), the proxy's impersonating a certificate's user, or the client's own.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  PROXIED_CONTENT_POLICY,
  asksImpersonation,
  proxiesContent,
  requestHeadersForUpstream,
  responseHeadersForClient,
  tap,
} from '../../../../src/server/pass-through/pass-through.ts';
import {
  PROOF_AGES_BOOKMARKS,
  PROOF_AGES_REQUEST_HEADER,
  PROOF_AGE_HEADER,
  PROOF_RESOURCE_VERSION_HEADER,
} from '../../../../src/protocol/proof-age.ts';

const TOKEN_PROTOCOL = 'base64url.bearer.authorization.k8s.io.c2VjcmV0';

const client = {
  accept: 'application/json',
  authorization: 'Basic c29tZW9uZTpzZWNyZXQ=',
  cookie: 'session=secret',
  'impersonate-user': 'alice',
  'impersonate-extra-scopes': 'view',
  'sec-websocket-protocol': `v5.channel.k8s.io,${TOKEN_PROTOCOL} , v4.channel.k8s.io`,
  connection: 'Upgrade, x-hop',
  'x-hop': 'by hop',
  upgrade: 'websocket',
  'x-remote-user': 'system:admin',
  'x-remote-group': 'system:masters',
  'x-remote-extra-scopes': 'all',
} as const;

test('upstream headers as the proxy (sidecar): no Authorization, cookie, X-Remote-* or subprotocol token; Impersonate-* and the other protocols go on', () => {
  assert.deepEqual(requestHeadersForUpstream(client), {
    accept: 'application/json',
    'impersonate-user': 'alice',
    'impersonate-extra-scopes': 'view',
    'sec-websocket-protocol': 'v5.channel.k8s.io, v4.channel.k8s.io',
  });
  assert.deepEqual(requestHeadersForUpstream({ ...client, 'sec-websocket-protocol': TOKEN_PROTOCOL })['sec-websocket-protocol'], undefined);
  // Without a token, the client's protocols go exactly as it wrote them.
  assert.equal(requestHeadersForUpstream({ 'sec-websocket-protocol': 'a,b ,  c' })['sec-websocket-protocol'], 'a,b ,  c');
  // The prefix is case-sensitive, as the apiserver reads it.
  assert.equal(
    requestHeadersForUpstream({ 'sec-websocket-protocol': 'Base64url.bearer.authorization.k8s.io.x' })['sec-websocket-protocol'],
    'Base64url.bearer.authorization.k8s.io.x',
  );
});

test("upstream headers as the proxy impersonating a certificate's user: the client's Impersonate-* are dropped too", () => {
  const as = { kind: 'impersonate', username: 'carol', uid: '', groups: [], extra: {} } as const;
  assert.deepEqual(requestHeadersForUpstream(client, as), {
    accept: 'application/json',
    'sec-websocket-protocol': 'v5.channel.k8s.io, v4.channel.k8s.io',
  });
});

test('upstream headers as the client (shared mode, its own token or none): everything but hop-by-hop fields and the Authorization the upstream client sets', () => {
  for (const as of [{ kind: 'bearer', authorization: 'Bearer mine' } as const, { kind: 'anonymous' } as const]) {
    assert.deepEqual(requestHeadersForUpstream(client, as), {
      accept: 'application/json',
      cookie: 'session=secret',
      'impersonate-user': 'alice',
      'impersonate-extra-scopes': 'view',
      'sec-websocket-protocol': client['sec-websocket-protocol'],
      // The client speaks for itself: the apiserver believes these only from a front proxy's certificate, which it has not.
      'x-remote-user': 'system:admin',
      'x-remote-group': 'system:masters',
      'x-remote-extra-scopes': 'all',
    });
  }
});

test('asksImpersonation: any Impersonate-* header', () => {
  assert.equal(asksImpersonation({ 'impersonate-uid': '1' }), true);
  assert.equal(asksImpersonation({ 'impersonate-extra-x': 'y' }), true);
  assert.equal(asksImpersonation({ accept: '*/*', 'x-impersonate-user': 'a' }), false);
});

test('proxiesContent: the proxy subresource of pods, services and nodes, and the legacy proxy verb; nothing else', () => {
  for (const url of [
    '/api/v1/namespaces/ns/pods/web/proxy',
    '/api/v1/namespaces/ns/pods/web:8080/proxy/index.html?x=1',
    '/api/v1/namespaces/ns/services/https:web:443/proxy/',
    '/api/v1/nodes/n1/proxy/metrics',
    '/api/v1/proxy/namespaces/ns/pods/web/',
  ])
    assert.equal(proxiesContent('GET', url), true, url);
  for (const url of [
    '/api/v1/namespaces/ns/pods/proxy',
    '/api/v1/namespaces/proxy/pods/web',
    '/api/v1/namespaces/ns/pods/web/log',
    '/apis/apps/v1/namespaces/ns/deployments/proxy',
    '/proxy',
    '/version',
  ])
    assert.equal(proxiesContent('GET', url), false, url);
});

test("responseHeadersForClient: a proxied answer gets the sandbox beside its own policy; the apiserver's own answers are untouched", () => {
  assert.equal(responseHeadersForClient({ 'content-type': 'text/html' })['content-security-policy'], undefined);
  assert.equal(responseHeadersForClient({ 'content-type': 'text/html' }, true)['content-security-policy'], PROXIED_CONTENT_POLICY);
  assert.deepEqual(responseHeadersForClient({ 'content-security-policy': "default-src 'self'" }, true)['content-security-policy'], [
    "default-src 'self'",
    PROXIED_CONTENT_POLICY,
  ]);
});

/** What an observer of `chunks` is handed, through tap(), with `maxBytes` and `head`. */
async function tapped(chunks: readonly string[], maxBytes: number, head: boolean): Promise<string | undefined> {
  const seen: { called: boolean; body: Buffer | undefined } = { called: false, body: undefined };
  const through = tap(
    200,
    {},
    {
      maxBytes,
      head,
      observer: (_status, _headers, body) => {
        seen.called = true;
        seen.body = body;
      },
      failed: (error) => {
        throw error;
      },
    },
  );
  const passed: Buffer[] = [];
  through.on('data', (chunk: Buffer) => passed.push(chunk));
  const ended = new Promise((resolve) => through.on('end', resolve));
  for (const chunk of chunks) through.write(Buffer.from(chunk));
  through.end();
  await ended;
  assert.equal(Buffer.concat(passed).toString(), chunks.join(''), 'every byte passes on untouched');
  assert.ok(seen.called, 'the observer was called');
  return seen.body?.toString();
}

test('tap: the whole body up to maxBytes, or nothing; in head mode its first maxBytes, however long it is', async () => {
  assert.equal(await tapped(['abc', 'def'], 6, false), 'abcdef');
  assert.equal(await tapped(['abc', 'def'], 5, false), undefined);
  assert.equal(await tapped(['abc', 'def', 'g'], 6, false), undefined, 'a chunk after the body filled maxBytes');
  assert.equal(await tapped(['abc', 'def', 'ghi'], 5, true), 'abcde');
  assert.equal(await tapped(['abc', 'def'], 6, true), 'abcdef');
  assert.equal(await tapped(['ab'], 6, true), 'ab');
});

test("pass-through: an upstream proxy's proof age goes on to the client as it came, and a watch's request for bookmark ages goes upstream", () => {
  const out = responseHeadersForClient({
    'content-type': 'application/json',
    [PROOF_AGE_HEADER]: '1234',
    [PROOF_RESOURCE_VERSION_HEADER]: '42',
  });
  assert.equal(out[PROOF_AGE_HEADER], '1234', "a further proxy's answer keeps its age: the client counts it as old as it is");
  assert.equal(out[PROOF_RESOURCE_VERSION_HEADER], '42');
  assert.equal(responseHeadersForClient({ 'content-type': 'application/json' })[PROOF_AGE_HEADER], undefined, "the apiserver's: none");
  assert.equal(
    requestHeadersForUpstream({ [PROOF_AGES_REQUEST_HEADER]: PROOF_AGES_BOOKMARKS })[PROOF_AGES_REQUEST_HEADER],
    PROOF_AGES_BOOKMARKS,
  );
});
