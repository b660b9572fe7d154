/**
 * What the freshness keeper (src/cache/freshness-keeper.ts) builds on, checked against the real
 * apiserver: a consistent read of one type moves that type's watch cache to the cluster's current
 * resourceVersion (the cacher asks etcd for its own watch's progress), and no other type's. So one
 * type's freshness proof cannot stand for another's, and each quiet type is proven on its own.
 * If a later apiserver moved every cacher with one read, proofs could be shared across types.
 *
 * Two custom resources of the test's own, so that no other test's reads move their caches.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube, testCrd } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

test("a consistent read moves its own type's watch cache to the current RV, and no other type's", { timeout: 120_000 }, async (t) => {
  const { admin } = shared;
  const ns = await testNamespace(t, admin);
  const [a, b] = [await testCrd(t, admin), await testCrd(t, admin)];
  const collection = (crd: typeof a): string => `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
  for (const crd of [a, b])
    await kube(admin, 'POST', collection(crd), { apiVersion: `${crd.group}/${crd.version}`, kind: crd.kind, metadata: { name: 'one' } });
  /** The RV of a type's watch cache: a LIST at resourceVersion=0 is served from it as it is. */
  const cacherRv = async (crd: typeof a): Promise<bigint> =>
    BigInt(
      (await kube<{ metadata: { resourceVersion: string } }>(admin, 'GET', `${collection(crd)}?resourceVersion=0`)).metadata
        .resourceVersion,
    );
  // The other type's cache may move now and then of its own accord while the machine is busy
  // (as 2 RVs once in CI); what the design relies on is that the read does not move it. Up to
  // three rounds: one in which it stays behind the write settles it; moved in all three, it fails.
  const rounds: string[] = [];
  let stayedBehind = false;
  for (let round = 0; round < 3 && !stayedBehind; round++) {
    const before = await cacherRv(b);
    // A write elsewhere moves the cluster's RV past both types' caches.
    const written = await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `elsewhere-${String(round)}` } });
    const writtenRv = BigInt(written.metadata.resourceVersion);
    assert.ok(writtenRv > before);
    const consistent = BigInt(
      (await kube<{ metadata: { resourceVersion: string } }>(admin, 'GET', collection(a))).metadata.resourceVersion,
    );
    assert.ok(consistent >= writtenRv, 'a consistent read is at the current RV');
    assert.ok((await cacherRv(a)) >= consistent, "the read type's cache was moved there");
    const after = await cacherRv(b);
    rounds.push(`${String(before)} -> ${String(after)}, the write at ${String(writtenRv)}`);
    stayedBehind = after < writtenRv;
  }
  t.diagnostic(`the other type's cache: ${rounds.join('; ')}`);
  assert.ok(stayedBehind, `the other type's cache was not moved by the read: ${rounds.join('; ')}`);
});
