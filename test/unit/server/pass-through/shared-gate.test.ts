/**
 * The shared gate's limits (admit): flows by user and address, the apiserver's exempt group, the
 * SubjectAccessReviews a flow waits on, and the limit on reviews of unknown tokens in front of
 * identify(), with a fake SharedAccess whose reviews the test resolves.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { test } from 'node:test';
import { unauthorized } from '../../../../src/auth/forbidden.ts';
import type { Identified, ReadDecision, SharedAccess } from '../../../../src/auth/shared-access.ts';
import type { UserInfo } from '../../../../src/auth/user-info.ts';
import { parseRequest } from '../../../../src/request/parsed-request.ts';
import { newFlowLimits } from '../../../../src/server/pass-through/flow-limits.ts';
import { admit, admitOwnPage, cacheable, rejectedByReason } from '../../../../src/server/pass-through/shared-gate.ts';
import { newFlowRefusalLimits } from '../../../../src/server/pass-through/flow-refusals.ts';
import { StatusError } from '../../../../src/kube/status.ts';
import type { Admission, Fairness } from '../../../../src/server/pass-through/shared-gate.ts';
import { newTokenReviewLimits } from '../../../../src/server/pass-through/token-review-limits.ts';
import { MAX_SELECTOR_BYTES } from '../../../../src/selector/selector-bounds.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';

const USERS: Readonly<Record<string, UserInfo>> = {
  alice: { username: 'alice', uid: '', groups: ['system:authenticated'], extra: {} },
  bob: { username: 'bob', uid: '', groups: ['system:authenticated'], extra: {} },
  admin: { username: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'], extra: {} },
};

function incoming(token: string | undefined, address = '10.0.0.1'): IncomingMessage {
  return {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    socket: { remoteAddress: address },
  } as unknown as IncomingMessage;
}

/** Tokens are user names; the others are refused. Reviews of authorization wait for the test. */
function fakeAccess(): SharedAccess & { identified: number; authorizations: ((d: ReadDecision) => void)[]; known: Set<string> } {
  const authorizations: ((d: ReadDecision) => void)[] = [];
  const known = new Set<string>();
  const access = {
    identified: 0,
    authorizations,
    known,
    reviews: () => ({ tokenReviews: 0, subjectAccessReviews: 0 }),
    needsTokenReview: (req: IncomingMessage) => {
      const token = req.headers.authorization?.slice('Bearer '.length);
      return token !== undefined && !known.has(token);
    },
    identify(req: IncomingMessage): Promise<Identified> {
      access.identified++;
      const token = req.headers.authorization?.slice('Bearer '.length);
      if (token === undefined) return Promise.resolve({ kind: 'forward', why: 'anonymous', as: { kind: 'anonymous' } });
      known.add(token);
      const user = USERS[token];
      if (user === undefined) return Promise.resolve({ kind: 'refused', error: unauthorized() });
      return Promise.resolve({ kind: 'user', user, as: { kind: 'bearer', authorization: `Bearer ${token}` } });
    },
    authorizeRead: () =>
      new Promise<ReadDecision>((resolve) => {
        authorizations.push(resolve);
      }),
  };
  return access;
}

/** Lets the promises already resolved run their continuations. */
function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const GET = parseRequest('GET', '/api/v1/namespaces/default/configmaps/x');
const WATCH = parseRequest('GET', '/api/v1/namespaces/default/configmaps?watch=1');
const CREATE = parseRequest('POST', '/api/v1/namespaces/default/configmaps');

function fairness(limits: { requests?: number; watches?: number; reviews?: number }, tokens?: Fairness['tokenReviews']): Fairness {
  return {
    flows: newFlowLimits({
      maxRequestsInflight: limits.requests ?? 0,
      maxWatches: limits.watches ?? 0,
      maxReviewsInflight: limits.reviews ?? 0,
    }),
    tokenReviews: tokens,
  };
}

function admitted(admission: Admission): Extract<Admission, { kind: 'forward' | 'read' }> {
  assert.ok(admission.kind === 'forward' || admission.kind === 'read', `not admitted: ${admission.kind}`);
  return admission;
}

test('shared gate: a flow is a user at an address; past its limit, rejected with Retry-After 1 and nothing more is asked', async () => {
  const access = fakeAccess();
  const limits = fairness({ requests: 1, watches: 1 });
  const held = admitted(await admit(access, incoming('alice'), CREATE, limits));
  assert.deepEqual(await admit(access, incoming('alice'), CREATE, limits), {
    kind: 'rejected',
    reason: 'requests-in-flight',
    retryAfterSeconds: 1,
    after: 'close',
  });
  // The same user elsewhere, another user at the same address, and no credentials (the address): flows of their own.
  admitted(await admit(access, incoming('alice', '10.0.0.2'), CREATE, limits));
  admitted(await admit(access, incoming('bob'), CREATE, limits));
  admitted(await admit(access, incoming(undefined), CREATE, limits));
  assert.equal((await admit(access, incoming(undefined), CREATE, limits)).kind, 'rejected');
  // A watch is a seat of its own kind; an upgrade (no request) a request seat.
  const watching = admit(access, incoming('alice'), WATCH, limits);
  await settled();
  assert.equal(access.authorizations.length, 1, 'the watch waits on its review');
  access.authorizations.shift()?.({ kind: 'allowed' });
  assert.equal((await watching).kind, 'read');
  assert.equal((await admit(access, incoming('alice'), WATCH, limits)).kind, 'rejected');
  assert.equal((await admit(access, incoming('alice'), undefined, limits)).kind, 'rejected');
  held.seat.release();
  admitted(await admit(access, incoming('alice'), undefined, limits));
  // system:masters is never limited (the apiserver's exempt FlowSchema).
  for (let i = 0; i < 5; i++) admitted(await admit(access, incoming('admin'), CREATE, limits));
});

test("shared gate: a read waits on its SubjectAccessReview within the flow's reviews in flight; a denial gives the seat back", async () => {
  const access = fakeAccess();
  const limits = fairness({ requests: 3, reviews: 1 });
  const first = admit(access, incoming('alice'), GET, limits);
  await settled();
  assert.equal(access.authorizations.length, 1, 'the first read waits on its review');
  assert.deepEqual(await admit(access, incoming('alice'), GET, limits), {
    kind: 'rejected',
    reason: 'reviews-in-flight',
    retryAfterSeconds: 1,
    after: 'close',
  });
  access.authorizations.shift()?.({ kind: 'refused', error: new Error('403') as never });
  assert.equal((await first).kind, 'refused');
  assert.deepEqual(limits.flows.held(), { request: 0, watch: 0, review: 0 }, 'refused and rejected: no seat kept');
});

test("shared gate: an identified flow's refused answers spend its bucket, its own 403s included; past it, rejected with Retry-After and held unread; system:masters never", async () => {
  const access = fakeAccess();
  const clock = new FakeClock();
  const limits: Fairness = { ...fairness({}), flowRefusals: newFlowRefusalLimits({ qpsPerFlow: 1, burstPerFlow: 2, clock }) };
  // Answered 200 and 404 a hundred times: nothing spent.
  for (let i = 0; i < 100; i++) admitted(await admit(access, incoming('alice'), CREATE, limits)).answered?.(i % 2 === 0 ? 201 : 404);
  // A pass-through refused (the apiserver's 422), then a read the SubjectAccessReview denies (the gate's own 403).
  admitted(await admit(access, incoming('alice'), CREATE, limits)).answered?.(422);
  const read = admit(access, incoming('alice'), GET, limits);
  await settled();
  access.authorizations.shift()?.({
    kind: 'refused',
    error: new StatusError({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'no',
      reason: 'Forbidden',
      code: 403,
    }),
  });
  assert.equal((await read).kind, 'refused');
  assert.deepEqual(await admit(access, incoming('alice'), GET, limits), {
    kind: 'rejected',
    reason: 'refusals-per-flow',
    retryAfterSeconds: 1,
    after: 'hold-unread',
  });
  assert.equal(access.authorizations.length, 0, 'nothing reviewed for a rejected request');
  // Another user at the address, the same user elsewhere, system:masters: their own buckets, or none.
  admitted(await admit(access, incoming('bob'), CREATE, limits));
  admitted(await admit(access, incoming('alice', '10.0.0.2'), CREATE, limits));
  for (let i = 0; i < 5; i++) admitted(await admit(access, incoming('admin'), CREATE, limits)).answered?.(410);
  clock.step(1_000);
  admitted(await admit(access, incoming('alice'), CREATE, limits));
  assert.deepEqual(rejectedByReason(limits)['refusals-per-flow'], 1);
});

test('shared gate: unknown tokens are reviewed within the TokenReview limits; past them, rejected before identify()', async () => {
  const access = fakeAccess();
  const clock = new FakeClock();
  const tokens = newTokenReviewLimits({ qpsPerAddress: 1, burstPerAddress: 3, qps: 0, burst: 0, maxInflight: 0, clock });
  const limits = fairness({}, tokens);
  for (let i = 0; i < 3; i++) assert.equal((await admit(access, incoming(`junk-${String(i)}`), GET, limits)).kind, 'refused');
  assert.equal(access.identified, 3);
  assert.deepEqual(await admit(access, incoming('junk-3'), GET, limits), {
    kind: 'rejected',
    reason: 'token-reviews-per-address',
    retryAfterSeconds: 1,
    after: 'hold-unread',
  });
  assert.equal(access.identified, 3, 'no review for the rejected token');
  // A known token costs no review: it passes with the bucket empty; so does another address's.
  assert.equal((await admit(access, incoming('junk-0'), GET, limits)).kind, 'refused');
  assert.equal((await admit(access, incoming('junk-4', '10.0.0.9'), GET, limits)).kind, 'refused');
  // A valid token gives its bucket token back: alice and bob, new, from the drained address after one second.
  clock.step(1000);
  admitted(await admit(access, incoming('bob'), CREATE, limits));
  admitted(await admit(access, incoming('alice'), CREATE, limits));
  assert.equal(tokens.inflight(), 0);
});

test("shared gate: the proxy's own pages are behind the same limit on reviews of unknown tokens", async () => {
  const access = fakeAccess();
  const tokens = newTokenReviewLimits({ qpsPerAddress: 1, burstPerAddress: 1, qps: 0, burst: 0, maxInflight: 0, clock: new FakeClock() });
  const answered: number[] = [];
  const res = {
    headersSent: false,
    shouldKeepAlive: true,
    socket: null,
    writeHead(code: number) {
      answered.push(code);
      return this;
    },
    end: () => undefined,
  } as unknown as ServerResponse;
  const metrics = parseRequest('GET', '/metrics');
  assert.equal(await admitOwnPage(access, incoming('junk-a'), res, metrics, tokens), false);
  assert.equal(await admitOwnPage(access, incoming('junk-b'), res, metrics, tokens), false);
  assert.deepEqual(answered, [401, 429]);
  assert.equal(access.identified, 1, 'no review past the burst');
});

test('shared gate: a LIST or WATCH whose selectors are longer than a cache takes goes upstream as the client, unreviewed; a GET is reviewed whatever its query', async () => {
  const access = fakeAccess();
  const limits = fairness({ requests: 2, watches: 1 });
  const long = `x in (${Array.from({ length: MAX_SELECTOR_BYTES / 4 }, (_, i) => `v${String(i)}`).join(',')})`;
  for (const path of [
    `/api/v1/namespaces/default/configmaps?watch=1&labelSelector=${encodeURIComponent(long)}`,
    `/api/v1/namespaces/default/configmaps?fieldSelector=${encodeURIComponent(`metadata.name=${'n'.repeat(MAX_SELECTOR_BYTES)}`)}`,
  ]) {
    const admission = admitted(await admit(access, incoming('alice'), parseRequest('GET', path), limits));
    assert.equal(admission.kind, 'forward', path.slice(0, 60));
    admission.seat.release();
  }
  assert.equal(access.authorizations.length, 0, 'no review');
  const get = admit(
    access,
    incoming('alice'),
    parseRequest('GET', `/api/v1/namespaces/default/configmaps/x?labelSelector=${encodeURIComponent(long)}`),
    limits,
  );
  await settled();
  assert.equal(access.authorizations.length, 1, 'a GET of a named object is the cache’s to answer: reviewed');
  access.authorizations.shift()?.({ kind: 'allowed' });
  assert.equal((await get).kind, 'read');
});

test('shared gate: a selector is judged too long from its raw length when that alone tells (past three bytes of query per byte of bound), else from its decoded bytes', () => {
  const list = (query: string): boolean => cacheable(parseRequest('GET', `/api/v1/namespaces/default/configmaps?${query}`));
  // Every byte escaped: exactly the bound once decoded, three times it raw: the cache's to answer.
  assert.equal(list(`limit=5&labelSelector=${'%61'.repeat(MAX_SELECTOR_BYTES)}`), true);
  assert.equal(list(`fieldSelector=${'%61'.repeat(MAX_SELECTOR_BYTES + 1)}`), false, 'one byte past it: decoded');
  // Far past it raw: too long without decoding, wherever the parameter is.
  assert.equal(list(`labelSelector=${'a'.repeat(3 * MAX_SELECTOR_BYTES + 1)}&watch=true`), false);
  assert.equal(list(`watch=true&fieldSelector=${'a'.repeat(3 * MAX_SELECTOR_BYTES + 1)}`), false);
  // Only the first of each is read (url.Values.Get): a later long one is not the selector.
  assert.equal(list(`labelSelector=app%3Dweb&labelSelector=${'a'.repeat(3 * MAX_SELECTOR_BYTES + 1)}`), true);
  // A name spelled otherwise is left to the decoded check, which still tells.
  assert.equal(list(`label%53elector=${'a'.repeat(3 * MAX_SELECTOR_BYTES + 1)}`), false);
  // Long queries of other parameters are no selector.
  assert.equal(list(`labelSelector=app%3Dweb&x=${'a'.repeat(3 * MAX_SELECTOR_BYTES + 1)}`), true);
});
