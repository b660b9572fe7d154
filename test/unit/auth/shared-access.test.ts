import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { MAX_REVIEWED_TARGET_BYTES, newSharedAccess } from '../../../src/auth/shared-access.ts';
import { parseRequest } from '../../../src/request/parsed-request.ts';
import type { Authorizer } from '../../../src/auth/subject-access-review.ts';
import type { TokenAuthenticator } from '../../../src/auth/token-review.ts';

/** A request as the server hands it: headers, and a TLS socket with or without a peer certificate. */
function request(options: {
  authorization?: string;
  certificate?: { subject: Record<string, string | string[]>; authorized: boolean };
}): IncomingMessage {
  const socket = {
    authorized: options.certificate?.authorized ?? false,
    getPeerCertificate: () => (options.certificate === undefined ? {} : { subject: options.certificate.subject }),
  };
  return {
    headers: options.authorization === undefined ? {} : { authorization: options.authorization },
    socket,
  } as unknown as IncomingMessage;
}

const tokens: TokenAuthenticator = {
  reviews: () => 0,
  cachedBytes: () => 0,
  authenticate: (token) => {
    if (token === 'down') return Promise.reject(new Error('TokenReview answered 503'));
    return Promise.resolve(
      token === 'good'
        ? { authenticated: true, user: { username: 'alice', uid: 'u', groups: ['system:authenticated'], extra: {} } }
        : { authenticated: false, reason: 'invalid' },
    );
  },
};
const authorizer: Authorizer = { reviews: () => 0, cachedBytes: () => 0, authorize: () => Promise.resolve({ allowed: true, reason: '' }) };
const access = newSharedAccess({ tokens, authorizer });

test('shared access: who a request is, as the apiserver’s authenticators decide it', async () => {
  // A verified certificate: its last CN (Go's pkix.Name keeps the last), its Os as groups.
  const byCert = await access.identify(request({ certificate: { subject: { CN: ['first', 'carol'], O: ['team'] }, authorized: true } }));
  assert.ok(byCert.kind === 'user', byCert.kind);
  assert.equal(byCert.user.username, 'carol');
  assert.deepEqual(byCert.user.groups, ['team', 'system:authenticated']);
  assert.equal(byCert.as.kind, 'impersonate');
  // A token: reviewed, forwarded as it was sent.
  const byToken = await access.identify(request({ authorization: 'Bearer good' }));
  assert.ok(byToken.kind === 'user');
  assert.deepEqual(byToken.as, { kind: 'bearer', authorization: 'Bearer good' });
  // A certificate that does not verify, with a good token: the token decides (union authenticator).
  const both = await access.identify(
    request({ authorization: 'Bearer good', certificate: { subject: { CN: 'mallory' }, authorized: false } }),
  );
  assert.ok(both.kind === 'user');
  assert.equal(both.user.username, 'alice');
  // Refused: a bad token, or an unverified certificate alone.
  assert.equal((await access.identify(request({ authorization: 'Bearer bad' }))).kind, 'refused');
  assert.equal((await access.identify(request({ certificate: { subject: { CN: 'mallory' }, authorized: false } }))).kind, 'refused');
  // No credentials (or not a bearer token): the apiserver decides, with none.
  assert.deepEqual(await access.identify(request({})), { kind: 'forward', why: 'anonymous', as: { kind: 'anonymous' } });
  assert.equal((await access.identify(request({ authorization: 'Basic YTpi' }))).kind, 'forward');
  // The review itself failed: the client's own token goes upstream, never the proxy's.
  assert.deepEqual(await access.identify(request({ authorization: 'Bearer down' })), {
    kind: 'forward',
    why: 'unreviewed',
    as: { kind: 'bearer', authorization: 'Bearer down' },
  });
});

test('shared access: a resource read whose target is longer than MAX_REVIEWED_TARGET_BYTES is left to the apiserver, unreviewed', async () => {
  let reviewed = 0;
  const counting = newSharedAccess({
    tokens,
    authorizer: {
      reviews: () => reviewed,
      cachedBytes: () => 0,
      authorize: () => {
        reviewed++;
        return Promise.resolve({ allowed: false, reason: '' });
      },
    },
  });
  const user = { username: 'alice', uid: 'u', groups: ['system:authenticated'], extra: {} };
  const base = '/api/v1/namespaces/default/configmaps';
  const justFits = `${base}/${'n'.repeat(MAX_REVIEWED_TARGET_BYTES - base.length - 1)}`;
  assert.equal(justFits.length, MAX_REVIEWED_TARGET_BYTES);
  assert.equal((await counting.authorizeRead(user, parseRequest('GET', justFits))).kind, 'refused');
  assert.equal(reviewed, 1);
  // A longer name, or a list with a long selector: the apiserver decides, as the client.
  assert.deepEqual(await counting.authorizeRead(user, parseRequest('GET', `${justFits}n`)), { kind: 'undecided' });
  const selector = `${base}?labelSelector=${'a'.repeat(MAX_REVIEWED_TARGET_BYTES)}`;
  assert.deepEqual(await counting.authorizeRead(user, parseRequest('GET', selector)), { kind: 'undecided' });
  assert.equal(reviewed, 1, 'no review sent for either');
});
