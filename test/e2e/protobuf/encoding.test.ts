/**
 * The proxy's protobuf encoder against the apiserver's own bytes: objects of many built-in types,
 * written with rich specs, read back from the apiserver as JSON and as protobuf; the proxy's
 * encoding of the JSON must be the apiserver's protobuf, byte for byte.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeObject } from '../../../src/protobuf/encode-object.ts';
import { envelope } from '../../../src/protowire/envelope.ts';
import { goTypeOf } from '../../../src/protobuf/schema.ts';
import { request } from 'undici';
import { startSuiteProxy } from '../../helpers/http2.ts';
import { proxyCounter } from '../../helpers/caching-proxy.ts';
import { listOf, unenvelope } from '../../helpers/protobuf-reader.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import type { RichObject } from '../../helpers/rich-objects.ts';
import { BUILT_IN_OBJECTS, RICH_OBJECTS } from '../../helpers/rich-objects.ts';
import { seededRandom } from '../../helpers/prng.ts';

const shared = useSharedAdmin();
const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const TYPED = 'application/vnd.kubernetes.protobuf, */*';

test(
  'protobuf: each rich object of each built-in type, encoded from its JSON, is the apiserver protobuf byte for byte',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (const spec of RICH_OBJECTS(ns)) {
      await t.test(`${spec.apiVersion} ${spec.kind}`, async () => {
        const created = await kube<{ metadata: { name: string } }>(shared.admin, 'POST', spec.collection, spec.body);
        const path = `${spec.collection}/${created.metadata.name}`;
        const { json, proto } = await readBoth(path);
        assert.equal(proto.headers['content-type'], PROTOBUF);
        const [group, version] = spec.apiVersion.includes('/') ? spec.apiVersion.split('/') : ['', spec.apiVersion];
        const goType = goTypeOf(group ?? '', version ?? '', spec.kind);
        assert.ok(goType !== undefined, 'a kind served in protobuf');
        const ours = envelope(spec.apiVersion, spec.kind, encodeObject(goType, json.body));
        if (!ours.equals(proto.body) && process.env.KCP_PB_DUMP !== undefined) {
          const { writeFileSync } = await import('node:fs');
          writeFileSync(`${process.env.KCP_PB_DUMP}/${spec.kind}.ours`, ours);
          writeFileSync(`${process.env.KCP_PB_DUMP}/${spec.kind}.theirs`, proto.body);
        }
        if (!ours.equals(proto.body)) assert.fail(`${spec.kind}: ${firstDifference(ours, proto.body)}\n${json.body.toString()}`);
      });
    }
  },
);

test(
  'protobuf through the proxy: a proxy caching every type lazily answers GET and LIST of each rich object in protobuf as the apiserver does',
  { timeout: 180_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const paths: { spec: RichObject; path: string }[] = [];
    for (const spec of RICH_OBJECTS(ns)) {
      const created = await kube<{ metadata: { name: string } }>(shared.admin, 'POST', spec.collection, spec.body);
      paths.push({ spec, path: `${spec.collection}/${created.metadata.name}` });
      removeIfClusterScoped(t, `${spec.collection}/${created.metadata.name}`);
    }
    const proxy = await startSuiteProxy(shared.cp, ['--port', '0', '--log-level', 'warn'], await upstreamConfigFor(shared.cp));
    t.after(() => proxy.stop(0));
    const url = proxy.url ?? '';
    const viaProxy = async (path: string): Promise<{ status: number; body: Buffer }> => {
      const res = await request(`${url}${path}`, { headers: { accept: TYPED } });
      return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
    };
    for (const { spec, path } of paths) {
      // The first read starts the type's cache and waits for it; the object may change meanwhile (a CRD's status).
      let ours = await viaProxy(path);
      let theirs = await readBoth(path);
      for (let i = 0; i < 5 && !ours.body.equals(theirs.proto.body); i++) {
        ours = await viaProxy(`${path}?resourceVersion=${rvOf(theirs.json.body)}`);
        theirs = await readBoth(path);
      }
      assert.equal(ours.status, 200, path);
      if (!ours.body.equals(theirs.proto.body)) assert.fail(`GET ${path}: ${firstDifference(ours.body, theirs.proto.body)}`);
      if (!spec.collection.includes('/namespaces/')) continue;
      const listed = await viaProxy(spec.collection);
      const direct = await shared.admin.request({ method: 'GET', path: spec.collection, headers: { accept: TYPED } });
      const a = listOf(unenvelope(listed.body).raw);
      const b = listOf(unenvelope(direct.body).raw);
      assert.deepEqual(
        a.items.map((i) => i.toString('hex')),
        b.items.map((i) => i.toString('hex')),
        `LIST ${spec.collection}`,
      );
    }
    const answers = await proxyCounter(proxy.metrics, 'kube_cache_proxy_cache_answers_total', { content_type: PROTOBUF });
    t.diagnostic(`${String(answers)} protobuf answers from the cache`);
    assert.ok(answers >= paths.length, 'from the cache');
  },
);

/** A cluster-scoped object the test wrote is deleted when it ends (namespaced ones go with the namespace). */
function removeIfClusterScoped(t: { after(fn: () => Promise<void>): void }, path: string): void {
  if (path.includes('/namespaces/')) return;
  t.after(async () => {
    await shared.admin.request({ method: 'DELETE', path });
  });
}

test(
  'protobuf: the apiserver own objects (APIServices, the default namespace, built-in roles and flow schemas) encoded from their JSON',
  { timeout: 60_000 },
  async () => {
    for (const object of BUILT_IN_OBJECTS) {
      const { json, proto } = await readBoth(object.path);
      const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : ['', object.apiVersion];
      const goType = goTypeOf(group ?? '', version ?? '', object.kind);
      assert.ok(goType !== undefined);
      const ours = envelope(object.apiVersion, object.kind, encodeObject(goType, json.body));
      if (!ours.equals(proto.body)) assert.fail(`${object.path}: ${firstDifference(ours, proto.body)}`);
    }
  },
);

/**
 * A copy of `value` with a random subset of its object members left out at every depth (never
 * metadata.name or generateName, so that it can be created); arrays keep their elements, each
 * thinned the same way.
 */
function thinned(value: unknown, random: () => number, path: string): unknown {
  if (Array.isArray(value)) return value.map((v, i) => thinned(v, random, `${path}[${String(i)}]`));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    const always = (path === '' && key === 'metadata') || (path === '.metadata' && (key === 'name' || key === 'generateName'));
    const keep = always || random() < 0.6;
    if (keep) out[key] = thinned(member, random, `${path}.${key}`);
  }
  return out;
}

test(
  'protobuf: objects written with random subsets of their fields (seeded), encoded from their JSON, are the apiserver protobuf',
  { timeout: 180_000 },
  async (t) => {
    const seed = Number(process.env.KCP_PROTOBUF_SEED ?? 26);
    const random = seededRandom(seed);
    const ns = await testNamespace(t, shared.admin);
    let compared = 0;
    for (let round = 0; round < 4; round++) {
      for (const spec of RICH_OBJECTS(ns)) {
        const body = thinned(spec.body, random, '') as RichObject['body'];
        const metadata = body.metadata as Record<string, unknown>;
        if (typeof metadata.name === 'string') metadata.name = `${metadata.name}-r${String(round)}`;
        const res = await shared.admin.request({ method: 'POST', path: spec.collection, body: JSON.stringify(body) });
        if (res.statusCode !== 201) continue; // a required field left out: the apiserver refuses it, as it should
        const name = (JSON.parse(res.body.toString()) as { metadata: { name: string } }).metadata.name;
        removeIfClusterScoped(t, `${spec.collection}/${name}`);
        const { json, proto } = await readBoth(`${spec.collection}/${name}`);
        const [group, version] = spec.apiVersion.includes('/') ? spec.apiVersion.split('/') : ['', spec.apiVersion];
        const goType = goTypeOf(group ?? '', version ?? '', spec.kind);
        assert.ok(goType !== undefined);
        const ours = envelope(spec.apiVersion, spec.kind, encodeObject(goType, json.body));
        if (!ours.equals(proto.body))
          assert.fail(`seed ${String(seed)}, ${spec.kind}: ${firstDifference(ours, proto.body)}\n${json.body.toString()}`);
        compared++;
      }
    }
    t.diagnostic(`seed ${String(seed)}: ${String(compared)} objects compared`);
    assert.ok(compared >= 40, `enough objects were valid to compare (${String(compared)})`);
  },
);

function rvOf(json: Buffer): string {
  return (JSON.parse(json.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

/** The object as JSON and as protobuf at one resourceVersion (the apiserver's own controllers may change it meanwhile: a CRD's status). */
async function readBoth(path: string): Promise<{ json: { body: Buffer }; proto: { body: Buffer; headers: Record<string, unknown> } }> {
  const rv = (body: Buffer): string => (JSON.parse(body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  for (;;) {
    const json = await shared.admin.request({ method: 'GET', path, headers: { accept: 'application/json' } });
    const proto = await shared.admin.request({ method: 'GET', path, headers: { accept: PROTOBUF } });
    const again = await shared.admin.request({ method: 'GET', path, headers: { accept: 'application/json' } });
    if (rv(json.body) === rv(again.body)) return { json, proto };
  }
}

/** Where two encodings part, with the bytes around it. */
function firstDifference(ours: Buffer, theirs: Buffer): string {
  let i = 0;
  while (i < ours.length && i < theirs.length && ours[i] === theirs[i]) i++;
  const around = (b: Buffer): string => `${b.subarray(Math.max(0, i - 24), i).toString('hex')}|${b.subarray(i, i + 24).toString('hex')}`;
  return `lengths ${String(ours.length)} vs ${String(theirs.length)}, first difference at ${String(i)}: ours ${around(ours)} apiserver ${around(theirs)} (apiserver text: ${JSON.stringify(theirs.subarray(Math.max(0, i - 40), i + 40).toString('latin1'))})`;
}
