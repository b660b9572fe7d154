import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ResourceScope } from '../../../src/informer/lister-watcher.ts';
import {
  collectionPath,
  decodeList,
  decodeWatchLine,
  describeScope,
  newListerWatcher,
  splitLines,
} from '../../../src/informer/lister-watcher.ts';
import { arrayElements, objectMembers, skipValue } from '../../../src/json/json-scan.ts';
import { fieldValue, objectBytes, objectName } from '../../../src/informer/object.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { ApiStatusError } from '../../../src/upstream/api-error.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { isPending, settles } from '../../helpers/scripted-lister-watcher.ts';

/** Go's encoding/json escapes <, > and & (and we add multi-byte UTF-8): a re-serialization would change these bytes. */
const GO_ESCAPED = String.raw`"note":"\u003cb\u003e \u0026 caf\u00e9 é 日本 \ud83d\ude00 \"q\" \\"`;

test('decodeList: built-in items keep their bytes exactly, prefixed with the kind and apiVersion of the list', () => {
  const itemA = `{"metadata":{"name":"a","namespace":"ns","resourceVersion":"40","labels":{"app":"web"}},"spec":{${GO_ESCAPED}}}`;
  const itemB = `{"metadata":{"name":"b","namespace":"ns","resourceVersion":"41"},"status":{"phase":"Running"}}`;
  const body = Buffer.from(
    `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"tok"},"items":[${itemA},${itemB}]}`,
  );
  const list = decodeList(body);

  assert.equal(list.resourceVersion, '42');
  assert.equal(list.continue, 'tok');
  assert.equal(list.items.length, 2);
  const [a, b] = list.items;
  assert.ok(a !== undefined && b !== undefined);
  assert.equal(objectBytes(a).toString('utf8'), `{"kind":"Pod","apiVersion":"v1",${itemA.slice(1)}`);
  assert.equal(objectBytes(b).toString('utf8'), `{"kind":"Pod","apiVersion":"v1",${itemB.slice(1)}`);
  assert.ok(objectBytes(a).includes(String.raw`\u003cb\u003e \u0026`), 'Go escapes survive');
  assert.deepEqual(
    {
      key: a.key,
      ns: a.namespace,
      name: objectName(a),
      rv: a.resourceVersion,
      labels: a.labels,
      fields: [fieldValue(a, 'metadata.name'), fieldValue(a, 'metadata.namespace')],
    },
    { key: 'ns/a', ns: 'ns', name: 'a', rv: '40', labels: { app: 'web' }, fields: ['a', 'ns'] },
  );
  // The parsed meaning is unchanged too.
  assert.equal((JSON.parse(objectBytes(a).toString('utf8')) as { spec: { note: string } }).spec.note, '<b> & café é 日本 😀 "q" \\');
  // Each item owns its bytes: a cached object never pins the whole response.
  assert.equal(typeof a.rest, 'string', 'copied out of the body, never a view of it');
});

test('decodeList: items of a group take its apiVersion; CRD items (starting with apiVersion) are left untouched', () => {
  const deployments = decodeList(
    Buffer.from(
      '{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"d","namespace":"ns","resourceVersion":"6"}}]}',
    ),
  );
  assert.equal(
    objectBytes(deployments.items[0] as KubeObject).toString(),
    '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","namespace":"ns","resourceVersion":"6"}}',
  );
  assert.equal(deployments.continue, '');

  const widget = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"3"},"spec":{${GO_ESCAPED}}}`;
  const widgets = decodeList(
    Buffer.from(`{"apiVersion":"example.com/v1","items":[${widget}],"kind":"WidgetList","metadata":{"resourceVersion":"9"}}`),
  );
  const [w] = widgets.items;
  assert.ok(w !== undefined);
  assert.equal(objectBytes(w).toString('utf8'), widget);
  assert.equal(w.key, 'w');
  assert.equal(widgets.resourceVersion, '9');
});

test('decodeList: no items, null items, spaces between members', () => {
  assert.deepEqual(decodeList(Buffer.from('{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}')), {
    items: [],
    resourceVersion: '5',
    continue: '',
  });
  assert.equal(
    decodeList(Buffer.from('{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":null}')).items.length,
    0,
  );
  const spaced = decodeList(
    Buffer.from(
      '{ "kind" : "PodList" , "apiVersion":"v1", "metadata": {"resourceVersion":"8"}, "items" : [ {"metadata":{"name":"a"}} , {"metadata":{"name":"b"}} ] }',
    ),
  );
  assert.deepEqual(
    spaced.items.map((i) => objectBytes(i).toString()),
    ['{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}', '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b"}}'],
  );
});

test('json-scan: values are delimited by bytes, strings holding brackets, quotes and escapes included', () => {
  const tricky = String.raw`{"s":"}]{[ \" \\","n":-1.5e3,"t":true,"z":null,"o":{"a":[1,{"b":"]"}]},"e":[]}`;
  const body = Buffer.from(` ${tricky} `);
  const members = objectMembers(body);
  const text = (name: string): string => {
    const span = members.get(name);
    assert.ok(span !== undefined, name);
    return body.toString('utf8', span.start, span.end);
  };
  assert.deepEqual([...members.keys()], ['s', 'n', 't', 'z', 'o', 'e']);
  assert.equal(text('s'), String.raw`"}]{[ \" \\"`);
  assert.equal(text('n'), '-1.5e3');
  assert.equal(text('t'), 'true');
  assert.equal(text('z'), 'null');
  assert.equal(text('o'), '{"a":[1,{"b":"]"}]}');
  const array = Buffer.from('[ 1 , "]" , {"x":[2]} , [] ]');
  assert.deepEqual(
    arrayElements(array, { start: 0, end: array.length }).map((s) => array.toString('utf8', s.start, s.end)),
    ['1', '"]"', '{"x":[2]}', '[]'],
  );
  assert.deepEqual(arrayElements(Buffer.from('[]'), { start: 0, end: 2 }), []);
  assert.equal(skipValue(Buffer.from('  "a\\"b" tail'), 0), 8);
  assert.throws(() => objectMembers(Buffer.from('[1]')), SyntaxError);
  assert.throws(() => objectMembers(Buffer.from('{"a":"unterminated}')), SyntaxError);
});

function line(type: string, object: string): Buffer {
  return Buffer.from(`{"type":"${type}","object":${object}}`);
}

test('decodeWatchLine: ADDED, MODIFIED and DELETED carry the object bytes exactly', () => {
  const object = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"12"},"spec":{${GO_ESCAPED}}}`;
  for (const type of ['ADDED', 'MODIFIED', 'DELETED'] as const) {
    const source = line(type, object);
    const event = decodeWatchLine(source);
    assert.equal(event.type, type);
    assert.ok(event.type === type);
    assert.equal(objectBytes(event.object).toString('utf8'), object);
    assert.equal(event.object.key, 'ns/a');
    assert.equal(event.object.resourceVersion, '12');
    assert.equal(typeof event.object.rest, 'string', 'copied out of the chunk');
  }
  // A trailing \r (or space) is not part of the object.
  const crlf = decodeWatchLine(Buffer.concat([line('ADDED', object), Buffer.from('\r')]));
  assert.ok(crlf.type === 'ADDED');
  assert.equal(objectBytes(crlf.object).toString('utf8'), object);
});

test('decodeWatchLine: BOOKMARK gives its resourceVersion and the initial-events-end annotation', () => {
  const end = decodeWatchLine(
    line(
      'BOOKMARK',
      '{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"100","annotations":{"k8s.io/initial-events-end":"true"}}}',
    ),
  );
  assert.deepEqual({ ...end, object: undefined }, { type: 'BOOKMARK', resourceVersion: '100', initialEventsEnd: true, object: undefined });
  const plain = decodeWatchLine(line('BOOKMARK', '{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"101"}}'));
  assert.deepEqual(
    { ...plain, object: undefined },
    { type: 'BOOKMARK', resourceVersion: '101', initialEventsEnd: false, object: undefined },
  );
});

test('decodeWatchLine: ERROR gives the Status; an unknown type throws', () => {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message: 'too old resource version: 1 (5)',
    reason: 'Expired',
    code: 410,
  };
  assert.deepEqual(decodeWatchLine(line('ERROR', JSON.stringify(status))), { type: 'ERROR', status });
  assert.throws(() => decodeWatchLine(line('SURPRISE', '{"metadata":{}}')), SyntaxError);
});

test('decodeWatchLine: a line not in the apiserver layout is parsed whole', () => {
  const event = decodeWatchLine(Buffer.from('{ "object": {"metadata":{"name":"a","resourceVersion":"3"}}, "type": "MODIFIED" }'));
  assert.ok(event.type === 'MODIFIED');
  assert.equal(event.object.key, 'a');
  assert.equal(event.object.resourceVersion, '3');
});

async function* chunked(data: Buffer, cuts: readonly number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...cuts, data.length]) {
    // Alternate Buffers and plain Uint8Arrays (a view into a larger buffer), as streams may give either.
    const piece = data.subarray(start, cut);
    await Promise.resolve(); // each chunk on a later turn, as from a socket
    yield start % 2 === 0 ? piece : new Uint8Array(piece.buffer, piece.byteOffset, piece.byteLength);
    start = cut;
  }
}

async function lines(data: Buffer, cuts: readonly number[]): Promise<string[]> {
  const out: string[] = [];
  for await (const l of splitLines(chunked(data, cuts))) out.push(l.toString('utf8'));
  return out;
}

test('splitLines: lines come out whole wherever the chunks are cut, multi-byte UTF-8 included', async () => {
  const expected = ['{"type":"ADDED","object":{"metadata":{"name":"日本"}}}', '{"n":"é😀"}', 'last line without a newline'];
  const data = Buffer.from(`${expected[0] ?? ''}\n${expected[1] ?? ''}\n\n${expected[2] ?? ''}`);

  assert.deepEqual(await lines(data, []), expected);
  for (let cut = 1; cut < data.length; cut++) assert.deepEqual(await lines(data, [cut]), expected, `cut at ${String(cut)}`);
  // Byte by byte: every multi-byte character is split across chunks.
  assert.deepEqual(
    await lines(
      data,
      Array.from({ length: data.length - 1 }, (_, i) => i + 1),
    ),
    expected,
  );
  // Three-way cuts around the characters of 日本 and 😀.
  const at = data.indexOf('日');
  const emoji = data.indexOf('😀');
  assert.deepEqual(await lines(data, [at + 1, at + 2, at + 4, emoji + 1, emoji + 3]), expected);
});

test('splitLines: empty lines are skipped; a stream of newlines yields nothing', async () => {
  assert.deepEqual(await lines(Buffer.from('\n\n\n'), [1]), []);
  assert.deepEqual(await lines(Buffer.from('a\n\nb\n'), [2, 3]), ['a', 'b']);
});

test('collectionPath: core, grouped and namespaced collections; describeScope', () => {
  assert.equal(collectionPath({ group: '', version: 'v1', resource: 'pods' }), '/api/v1/pods');
  assert.equal(collectionPath({ group: '', version: 'v1', resource: 'pods', namespace: 'ns' }), '/api/v1/namespaces/ns/pods');
  assert.equal(collectionPath({ group: 'apps', version: 'v1', resource: 'deployments' }), '/apis/apps/v1/deployments');
  assert.equal(
    collectionPath({ group: 'apps', version: 'v1', resource: 'deployments', namespace: 'kube-system' }),
    '/apis/apps/v1/namespaces/kube-system/deployments',
  );
  assert.equal(collectionPath({ group: '', version: 'v1', resource: 'pods', namespace: 'a/b' }), '/api/v1/namespaces/a%2Fb/pods');
  assert.equal(describeScope({ group: '', version: 'v1', resource: 'pods' }), 'pods');
  assert.equal(describeScope({ group: 'apps', version: 'v1', resource: 'deployments', namespace: 'ns' }), 'deployments.apps in ns');
});

const PODS_IN_NS: ResourceScope = {
  group: '',
  version: 'v1',
  resource: 'pods',
  namespace: 'ns',
  labelSelector: 'app=web',
  fieldSelector: 'spec.nodeName=n1',
};

test('ListerWatcher: list sends the scope selectors, resourceVersion, limit and continue, and decodes the page', async () => {
  const upstream = newFakeUpstream({
    respond: () =>
      jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '10', continue: 'next' },
        items: [{ metadata: { name: 'a', namespace: 'ns', resourceVersion: '9' } }],
      }),
  });
  const lw = newListerWatcher(upstream.client, PODS_IN_NS);
  const first = await lw.list({ resourceVersion: '', limit: 500 });
  await lw.list({ limit: 500, continue: 'next' });
  await lw.list({ resourceVersion: '10', limit: 0 });
  assert.deepEqual(upstream.paths, [
    '/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&resourceVersion=&limit=500',
    '/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&limit=500&continue=next',
    '/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&resourceVersion=10',
  ]);
  assert.equal(first.resourceVersion, '10');
  assert.equal(first.continue, 'next');
  assert.equal(
    objectBytes(first.items[0] as KubeObject).toString(),
    '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"9"}}',
  );
});

test('ListerWatcher: a non-200 answer throws an ApiStatusError with its Status and Retry-After', async () => {
  const upstream = newFakeUpstream({
    respond: (req) =>
      req.path.includes('continue=')
        ? jsonResponse(410, { kind: 'Status', code: 410, reason: 'Expired', message: 'continue token expired' })
        : jsonResponse(429, { kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' }, { 'retry-after': '5' }),
  });
  const lw = newListerWatcher(upstream.client, { group: '', version: 'v1', resource: 'pods' });
  await assert.rejects(lw.list({ limit: 500, continue: 'old' }), (error: unknown) => {
    assert.ok(error instanceof ApiStatusError);
    assert.equal(error.code, 410);
    assert.equal(error.status.reason, 'Expired');
    return true;
  });
  await assert.rejects(lw.list({ resourceVersion: '' }), (error: unknown) => {
    assert.ok(error instanceof ApiStatusError);
    assert.equal(error.code, 429);
    assert.equal(error.retryAfterSeconds, 5);
    return true;
  });
});

test('ListerWatcher: watch sends its options and streams events split across chunks; the end of the body ends next()', async () => {
  const object = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"11"},"spec":{${GO_ESCAPED}}}`;
  const upstream = newFakeUpstream();
  const lw = newListerWatcher(upstream.client, PODS_IN_NS);
  const watch = await lw.watch({
    resourceVersion: '',
    resourceVersionMatch: 'NotOlderThan',
    sendInitialEvents: true,
    allowWatchBookmarks: true,
    timeoutSeconds: 300,
  });
  assert.equal(
    upstream.paths[0],
    '/api/v1/namespaces/ns/pods?watch=1&labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&resourceVersion=' +
      '&resourceVersionMatch=NotOlderThan&timeoutSeconds=300&allowWatchBookmarks=true&sendInitialEvents=true',
  );
  const stream = upstream.watches[0];
  assert.ok(stream !== undefined);
  const bytes = Buffer.from(
    `{"type":"ADDED","object":${object}}\n` +
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}\n',
  );
  const middle = bytes.indexOf('日') + 1;
  stream.write(bytes.subarray(0, middle));
  const first = watch.next();
  assert.equal(await isPending(first), true, 'half a line is not an event');
  stream.write(bytes.subarray(middle));
  const added = await settles(first, 'the ADDED event');
  assert.ok(added?.type === 'ADDED');
  assert.equal(objectBytes(added.object).toString('utf8'), object);
  assert.deepEqual(
    { ...(await watch.next()), object: undefined },
    { type: 'BOOKMARK', resourceVersion: '12', initialEventsEnd: true, object: undefined },
  );
  stream.end();
  assert.equal(await watch.next(), undefined);
});

test('ListerWatcher: stop() aborts the request and a pending next() resolves undefined', async () => {
  const upstream = newFakeUpstream();
  const lw = newListerWatcher(upstream.client, { group: 'apps', version: 'v1', resource: 'deployments' });
  const watch = await lw.watch({ resourceVersion: '10', allowWatchBookmarks: true, timeoutSeconds: 450 });
  assert.equal(upstream.paths[0], '/apis/apps/v1/deployments?watch=1&resourceVersion=10&timeoutSeconds=450&allowWatchBookmarks=true');
  const pending = watch.next();
  assert.equal(await isPending(pending), true);
  watch.stop();
  assert.equal(await settles(pending, 'next() after stop()'), undefined);
  assert.equal(upstream.watches[0]?.aborted(), true);
});

test('ListerWatcher: a watch refused with 410 throws an ApiStatusError', async () => {
  const upstream = newFakeUpstream({
    refuseWatch: () => jsonResponse(410, { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' }),
  });
  const lw = newListerWatcher(upstream.client, { group: '', version: 'v1', resource: 'pods' });
  await assert.rejects(lw.watch({ resourceVersion: '1' }), (error: unknown) => error instanceof ApiStatusError && error.code === 410);
});
