import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AnsweredObject, CachedKind, WriteLesson, WriteRequest } from '../../../src/cache/read-your-writes.ts';
import { MAX_DOUBT_BYTES, lessonOf, newReadYourWrites, objectAnswered } from '../../../src/cache/read-your-writes.ts';

const PODS: CachedKind = { kind: 'Pod', namespaced: true };
const NODES: CachedKind = { kind: 'Node', namespaced: false };

function write(verb: string, path: string): WriteRequest {
  // path: [namespace/]resource[/name[/subresource]]
  const parts = path.split('/');
  const namespaced = parts.length > 1 && parts[1] !== undefined && ['pods', 'configmaps'].includes(parts[1]);
  const [namespace = '', resource = '', name = '', subresource = ''] = namespaced ? parts : ['', ...parts];
  return { group: '', resource, verb, subresource, namespace, name };
}

const obj = (kind: string, name: string, namespace: string, rv?: bigint): AnsweredObject => ({
  kind,
  name,
  namespace,
  resourceVersion: rv,
});
/** A collection delete's answer: the list of what it deleted. */
const list = (kind: string, items: number): AnsweredObject => ({ kind, name: '', namespace: '', resourceVersion: 9n, items });
const learnt = (rv: bigint): WriteLesson => ({ kind: 'written', resourceVersion: rv });
const doubted = (w: WriteRequest): WriteLesson => ({
  kind: 'doubt',
  target: { group: w.group, resource: w.resource, namespace: w.namespace, name: w.name },
});
const nothing: WriteLesson = { kind: 'nothing' };

test('lessonOf: an RV only from the apiserver’s own answer about the object written', () => {
  const rows: readonly [
    string,
    WriteRequest,
    number,
    AnsweredObject | undefined,
    CachedKind | undefined,
    'written' | 'doubt' | 'nothing',
  ][] = [
    ['create', write('create', 'ns/pods'), 201, obj('Pod', 'generated-x', 'ns', 7n), PODS, 'written'],
    ['update', write('update', 'ns/pods/p'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'written'],
    ['patch', write('patch', 'ns/pods/p'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'written'],
    ['graceful delete (the object)', write('delete', 'ns/pods/p'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'written'],
    ['status', write('update', 'ns/pods/p/status'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'written'],
    ['ephemeralcontainers', write('patch', 'ns/pods/p/ephemeralcontainers'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'written'],
    ['resize', write('patch', 'ns/pods/p/resize'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'written'],
    ['scale', write('update', 'ns/pods/p/scale'), 200, obj('Scale', 'p', 'ns', 7n), PODS, 'written'],
    ['cluster-scoped', write('update', 'nodes/n'), 200, obj('Node', 'n', '', 7n), NODES, 'written'],
    // Another object, or none: doubted (a probe settles it), never waited for.
    ['another kind', write('update', 'ns/pods/p'), 200, obj('Secret', 'p', 'ns', 7n), PODS, 'doubt'],
    ['scale answered with the object', write('update', 'ns/pods/p/scale'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'doubt'],
    ['another name', write('update', 'ns/pods/p'), 200, obj('Pod', 'q', 'ns', 7n), PODS, 'doubt'],
    ['another namespace', write('create', 'ns/pods'), 201, obj('Pod', 'p', 'other', 7n), PODS, 'doubt'],
    ['a namespace on a cluster-scoped type', write('update', 'nodes/n'), 200, obj('Node', 'n', 'ns', 7n), NODES, 'doubt'],
    ['a Status', write('delete', 'ns/pods/p'), 200, obj('Status', '', '', undefined), PODS, 'doubt'],
    ['no RV', write('update', 'ns/pods/p'), 200, obj('Pod', 'p', 'ns'), PODS, 'doubt'],
    ['unreadable', write('update', 'ns/pods/p'), 200, undefined, PODS, 'doubt'],
    ['a collection delete', write('deletecollection', 'ns/pods'), 200, obj('PodList', '', '', 9n), PODS, 'doubt'],
    ['a collection delete that deleted some', write('deletecollection', 'ns/pods'), 200, list('PodList', 3), PODS, 'doubt'],
    ['a collection delete that deleted nothing', write('deletecollection', 'ns/pods'), 200, list('PodList', 0), PODS, 'nothing'],
    ['… answered as metadata', write('deletecollection', 'ns/pods'), 200, list('PartialObjectMetadataList', 0), PODS, 'nothing'],
    ['… an empty list of another kind', write('deletecollection', 'ns/pods'), 200, list('SecretList', 0), PODS, 'doubt'],
    ['… a Status', write('deletecollection', 'ns/pods'), 200, obj('Status', '', ''), PODS, 'doubt'],
    ['… unreadable', write('deletecollection', 'ns/pods'), 200, undefined, PODS, 'doubt'],
    ['… a conflict', write('deletecollection', 'ns/pods'), 409, list('PodList', 0), PODS, 'doubt'],
    ['binding (a Status)', write('create', 'ns/pods/p/binding'), 201, obj('Status', '', '', undefined), PODS, 'doubt'],
    ['eviction (a Status)', write('create', 'ns/pods/p/eviction'), 201, obj('Pod', 'p', 'ns', 7n), PODS, 'doubt'],
    ['conflict', write('update', 'ns/pods/p'), 409, undefined, PODS, 'doubt'],
    ['already exists', write('create', 'ns/pods'), 409, undefined, PODS, 'doubt'],
    ['update of what is gone', write('update', 'ns/pods/p'), 404, undefined, PODS, 'doubt'],
    // A pod's, a node's or a service's own answers, and what changes no object.
    ['proxy', write('create', 'ns/pods/p/proxy'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'nothing'],
    ['proxy, a conflict', write('update', 'ns/pods/p/proxy'), 409, undefined, PODS, 'nothing'],
    ['proxy, a 404', write('delete', 'ns/pods/p/proxy'), 404, undefined, PODS, 'nothing'],
    ['the legacy proxy verb', write('proxy', 'ns/pods/p'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'nothing'],
    ['exec', write('create', 'ns/pods/p/exec'), 200, obj('Pod', 'p', 'ns', 7n), PODS, 'nothing'],
    ['attach', write('create', 'ns/pods/p/attach'), 200, undefined, PODS, 'nothing'],
    ['portforward', write('create', 'ns/pods/p/portforward'), 200, undefined, PODS, 'nothing'],
    ['log', write('create', 'ns/pods/p/log'), 200, undefined, PODS, 'nothing'],
    ['a 404 to a subresource', write('update', 'ns/pods/p/status'), 404, undefined, PODS, 'nothing'],
    ['a 500', write('update', 'ns/pods/p'), 500, undefined, PODS, 'nothing'],
    ['an uncached type', write('update', 'ns/pods/p'), 200, obj('Pod', 'p', 'ns', 7n), undefined, 'nothing'],
    ['an uncached type, a conflict', write('update', 'ns/pods/p'), 409, undefined, undefined, 'nothing'],
  ];
  for (const [name, request, status, answer, cached, expected] of rows) {
    const lesson = lessonOf(request, status, answer, cached);
    const want: WriteLesson = expected === 'written' ? learnt(7n) : expected === 'doubt' ? doubted(request) : nothing;
    assert.deepEqual(lesson, want, name);
  }
});

test('read-your-writes: doubts are bounded in bytes; past MAX_DOUBT_BYTES (a 1 MiB name, or many) the whole type is doubted', () => {
  const writes = newReadYourWrites();
  const target = (namespace: string, name: string) => ({ group: '', resource: 'pods', namespace, name });
  writes.doubt(target('a', 'p'));
  assert.equal(writes.requirement(target('a', 'p')).probe, true);
  assert.equal(writes.requirement(target('b', 'q')).probe, false, 'one object doubted');
  // A write to a path of a 1 MiB name: not kept as such, the whole type doubted instead (one probe settles it).
  writes.doubt(target('a', 'x'.repeat(2 ** 20)));
  assert.equal(writes.requirement(target('b', 'q')).probe, true, 'the whole type');
  const seq = writes.sequence();
  writes.settle('', 'pods', seq, 10n);
  writes.reached('', 'pods', 10n);
  assert.equal(writes.requirement(target('b', 'q')).probe, false, 'settled');
  // Many doubts of long names fill the bytes before the count.
  const name = 'n'.repeat(250);
  const fit = Math.floor(MAX_DOUBT_BYTES / (2 * (1 + 250) + 64));
  for (let i = 0; i < fit; i++) writes.doubt(target('a', `${name}${String(i % 10)}`));
  assert.equal(writes.requirement(target('b', 'q')).probe, false, 'within the bound: only namespace a');
  writes.doubt(target('a', name));
  assert.equal(writes.requirement(target('b', 'q')).probe, true, 'past it: the whole type');
});

test('read-your-writes: a written RV past the apiserver’s own is forgotten; one it can have is kept', () => {
  const writes = newReadYourWrites();
  const all = { group: '', resource: 'pods', namespace: '', name: '' };
  writes.written('', 'pods', 105n);
  writes.unreachable('', 'pods', 110n);
  assert.equal(writes.requirement(all).written, 105n);
  writes.written('', 'pods', 18446744073709551615n);
  writes.unreachable('', 'pods', 110n);
  assert.equal(writes.requirement(all).written, 0n);
});

test('read-your-writes: a GET’s answer (the object at its RV) settles the doubts of that object only, those that arose before it', () => {
  const writes = newReadYourWrites();
  const pod = { group: '', resource: 'pods', namespace: 'a', name: 'p' };
  writes.doubt(pod);
  assert.deepEqual(writes.requirement(pod), { written: 0n, caughtUp: 0n, probe: true, probeOnly: false, objectOnly: true });
  const before = writes.sequence();
  // A doubt of another object of the namespace, after the GET was sent: not its to settle.
  writes.doubt({ ...pod, name: 'q' });
  writes.settleObject(pod, before, 7n);
  assert.deepEqual(writes.requirement(pod), { written: 0n, caughtUp: 7n, probe: false, probeOnly: false, objectOnly: false });
  assert.equal(writes.requirement({ ...pod, name: '' }).probe, true, 'the namespace’s LIST: q is still doubted');
  // A doubt of the namespace covers the GET but is no doubt of the object alone.
  writes.doubt({ ...pod, name: '' });
  assert.deepEqual(writes.requirement(pod), { written: 0n, caughtUp: 7n, probe: true, probeOnly: false, objectOnly: false });
  writes.settleObject(pod, writes.sequence(), 8n);
  assert.equal(writes.requirement({ ...pod, name: 'q' }).probe, true, 'the namespace’s doubt is left');
  // A Namespace (cluster-scoped): its finalize path gives the doubt the namespace's own name.
  const ns = { group: '', resource: 'namespaces', namespace: '', name: 'n' };
  writes.doubt({ ...ns, namespace: 'n' });
  assert.equal(writes.requirement(ns).objectOnly, true);
  writes.settleObject(ns, writes.sequence(), 9n);
  assert.deepEqual(writes.requirement(ns), { written: 0n, caughtUp: 9n, probe: false, probeOnly: false, objectOnly: false });
  // A GET answered without the object's RV (a 404): its doubts are a probe's to settle from then on.
  const gone = { ...pod, name: 'g' };
  writes.doubt(gone);
  writes.unsettledBy(gone, writes.sequence());
  assert.equal(writes.requirement(gone).probeOnly, true);
  assert.equal(writes.requirement({ ...pod, name: 'q' }).probeOnly, false, 'another object’s doubt is left as it was');
  // A LIST answered so: every doubt it read.
  writes.unsettledBy({ ...pod, name: '' }, writes.sequence());
  assert.equal(writes.requirement({ ...pod, name: 'q' }).probeOnly, true);
});

test('objectAnswered: the RV of the object read, of its kind (or as metadata), name and namespace; else none', () => {
  const p = { group: '', resource: 'pods', namespace: 'a', name: 'p' };
  assert.equal(objectAnswered(p, obj('Pod', 'p', 'a', 5n), PODS), 5n);
  assert.equal(objectAnswered(p, obj('PartialObjectMetadata', 'p', 'a', 5n), PODS), 5n);
  assert.equal(objectAnswered(p, obj('Pod', 'q', 'a', 5n), PODS), undefined);
  assert.equal(objectAnswered(p, obj('Pod', 'p', 'b', 5n), PODS), undefined);
  assert.equal(objectAnswered(p, obj('Status', 'p', 'a', 5n), PODS), undefined);
  assert.equal(objectAnswered(p, undefined, PODS), undefined);
  const n = { group: '', resource: 'nodes', namespace: '', name: 'n' };
  assert.equal(objectAnswered(n, obj('Node', 'n', '', 6n), NODES), 6n);
});
