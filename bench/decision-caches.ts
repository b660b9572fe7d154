/**
 * Shared mode's decision caches under a flood: `node --expose-gc bench/decision-caches.ts`.
 *
 * The SubjectAccessReview and TokenReview caches (src/auth/), sized as a proxy with deploy/node's
 * 512 MiB limit sizes them (the memory budget's share for decision caches, half each), answered by
 * a fake apiserver that denies everything, are flooded as one hostile client would flood them:
 * distinct denied reads (GETs of names never seen), GETs with ~1 MiB names, and distinct bearer
 * strings. After each flood: the bytes the cache counts, and the process's RSS and heap growth
 * after a full collection; then, once the entries' TTLs and a purge have passed on the fake clock,
 * the same again (what an idle proxy gives back). `--keep-nothing` runs the same floods with
 * caches that keep nothing: the RSS the floods cost by themselves (promises, request bodies,
 * malloc's arenas), to subtract. Run it as the image runs the proxy for figures like a node
 * proxy's: `MALLOC_MMAP_THRESHOLD_=32768 node --expose-gc --max-semi-space-size=1 ...` (V8's
 * young generation under a 512 MiB limit). Knobs: READS (distinct denied GETs, default 200,000),
 * SHARE (each cache's bytes; default the budget's), WARM (MiB of live objects held first, as a
 * proxy holds its caches). Figures only, never assertions; ~20 s on 2 cores.
 */
import { budgetSizes } from '../src/memory/memory-budget.ts';
import { newSubjectAccessReviewAuthorizer } from '../src/auth/subject-access-review.ts';
import type { RequestAttributes } from '../src/auth/user-info.ts';
import { newTokenAuthenticator } from '../src/auth/token-review.ts';
import { FakeClock } from '../test/helpers/fake-clock.ts';
import { jsonResponse, newFakeUpstream } from '../test/helpers/fake-upstream-client.ts';

const MiB = 1024 * 1024;
/** deploy/node's memory limit. */
const LIMIT_BYTES = 512 * MiB;
/** Distinct denied reads: far more than the cache holds, so that it is full and turning over. */
const DENIED_READS = Number(process.env.READS ?? 200_000);
/** GETs with ~1 MiB names (the figure: 100 of them held 96 MiB before). */
const LONG_NAMES = 200;
const DISTINCT_TOKENS = 100_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

interface Sample {
  readonly rss: number;
  readonly heap: number;
  readonly heapTotal: number;
}

function sample(): Sample {
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed, heapTotal: usage.heapTotal };
}

const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;

function report(what: string, start: Sample, counted: number): void {
  const now = sample();
  console.log(
    `${what.padEnd(58)} counted ${mib(counted).padStart(9)}  RSS ${(now.rss >= start.rss ? '+' : '') + mib(now.rss - start.rss)}  heap used ${(now.heap >= start.heap ? '+' : '') + mib(now.heap - start.heap)}, committed ${(now.heapTotal >= start.heapTotal ? '+' : '') + mib(now.heapTotal - start.heapTotal)}`,
  );
}

const clock = new FakeClock();
const upstream = newFakeUpstream({
  respond: (request) =>
    request.path.includes('tokenreviews')
      ? jsonResponse(201, { status: { authenticated: false, error: 'invalid bearer token' } })
      : jsonResponse(201, { status: { allowed: false, reason: '' } }),
});
// The fake keeps every path it was asked: not the caches' memory.
const forgetPaths = (): void => {
  upstream.paths.length = 0;
};
// `--keep-nothing`: the same floods with caches that keep nothing, for the flood's own cost.
const keepNothing = process.argv.includes('--keep-nothing');
const share = keepNothing ? 1 : Number(process.env.SHARE ?? 0) || Math.floor(budgetSizes(LIMIT_BYTES).decisionCachesBytes / 2);
const authorizer = newSubjectAccessReviewAuthorizer({ client: upstream.client, clock, maxBytes: share });
const tokens = newTokenAuthenticator({ client: upstream.client, clock, maxBytes: share });
console.log(
  keepNothing
    ? 'caches that keep nothing (the floods alone)'
    : `limit ${mib(LIMIT_BYTES)}: decision caches ${mib(2 * share)} (${mib(share)} each)`,
);

const user = {
  username: 'system:serviceaccount:tenant:attacker',
  uid: 'c3b7d3a4-0000-4000-8000-000000000000',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:tenant', 'system:authenticated'],
  extra: {},
};
const get = (name: string): RequestAttributes => ({
  user,
  verb: 'get',
  resourceRequest: true,
  namespace: 'tenant',
  apiGroup: '',
  apiVersion: 'v1',
  resource: 'configmaps',
  subresource: '',
  name,
  path: `/api/v1/namespaces/tenant/configmaps/${name}`,
});

// `WARM=<MiB>`: live objects held first, as a proxy holds its caches (a heap that has grown).
const warm = Array.from({ length: Number(process.env.WARM ?? 0) * 1024 }, (_, i) => ({ i, text: `${String(i)}-${'w'.repeat(900)}` }));
const start = sample();
for (let i = 0; i < DENIED_READS; i++) {
  await authorizer.authorize(get(`cm-${String(i).padStart(8, '0')}`));
  if (i % 10_000 === 0) forgetPaths();
}
forgetPaths();
report(`${String(DENIED_READS)} distinct denied GETs`, start, authorizer.cachedBytes());

const long = 'n'.repeat(MiB - 64);
for (let i = 0; i < LONG_NAMES; i++) await authorizer.authorize(get(`${long}${String(i)}`));
forgetPaths();
report(`+ ${String(LONG_NAMES)} denied GETs with ~1 MiB names`, start, authorizer.cachedBytes());

for (let i = 0; i < DISTINCT_TOKENS; i++) {
  await tokens.authenticate(`junk-${String(i)}-${'x'.repeat(32)}`);
  if (i % 10_000 === 0) forgetPaths();
}
forgetPaths();
report(`+ ${String(DISTINCT_TOKENS)} distinct refused bearer tokens`, start, authorizer.cachedBytes() + tokens.cachedBytes());

// Idle: the longest TTL (the token cache's 2 minutes) and a purge interval pass, nobody asks.
clock.step(2 * 60_000 + 30_001);
report('idle past the TTLs and a purge', start, authorizer.cachedBytes() + tokens.cachedBytes());
if (warm.length > 0) console.log(`with ${String(warm.length)} live objects held throughout`);
console.log(`reviews sent: ${String(authorizer.reviews())} SubjectAccessReviews, ${String(tokens.reviews())} TokenReviews`);
