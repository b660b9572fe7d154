import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import {
  accept,
  cleanPath,
  defaultRequestFilterOptions,
  extractHost,
  installRequestFilter,
  makeRegexpArray,
  RegexpSyntaxError,
  unescapePath,
} from '../../../src/request/request-filter.ts';
import type * as RequestFilter from '../../../src/request/request-filter.ts';
import { runsInLinearTime } from '../../helpers/linear-work.ts';

test('makeRegexpArray: splits on commas; "" is the empty list; a bad pattern throws', () => {
  assert.deepEqual(makeRegexpArray(''), []);
  assert.deepEqual(
    makeRegexpArray('^a$,b').map((re) => re.source),
    ['^a$', 'b'],
  );
  assert.equal(makeRegexpArray('(?i)^get$')[0]?.test('GET'), true, "Go's leading (?i) becomes the i flag");
  assert.throws(() => makeRegexpArray('a,(b'), RegexpSyntaxError);
});

test('extractHost: net.SplitHostPort, or the whole value when it cannot split', () => {
  assert.equal(extractHost('localhost:8001'), 'localhost');
  assert.equal(extractHost('localhost'), 'localhost');
  assert.equal(extractHost('127.0.0.1:'), '127.0.0.1');
  assert.equal(extractHost('[::1]'), '[::1]');
  assert.equal(extractHost('[::1]:8001'), '::1');
  assert.equal(extractHost('::1'), '::1');
  assert.equal(extractHost(''), '');
});

test('accept: kubectl proxy defaults', () => {
  const f = defaultRequestFilterOptions();
  assert.equal(accept(f, 'GET', '/api/v1/namespaces', 'localhost'), true);
  assert.equal(accept(f, 'DELETE', '/api/v1/namespaces/a', '127.0.0.1'), true, 'no method is rejected by default');
  assert.equal(accept(f, 'GET', '/version', '[::1]'), true);
  assert.equal(accept(f, 'GET', '/api/v1/namespaces', 'evil.example'), false, 'DNS rebinding');
  assert.equal(accept(f, 'GET', '/api/v1/namespaces', '::1'), false, '[::1]:port is not accepted by the defaults, as in kubectl');
  assert.equal(accept(f, 'GET', '/api/v1/namespaces', 'localhost.evil.example'), false);
  assert.equal(accept(f, 'POST', '/api/v1/namespaces/a/pods/p/exec', 'localhost'), false);
  assert.equal(accept(f, 'GET', '/api/v1/namespaces/a/pods/p/attach', 'localhost'), false);
  assert.equal(accept(f, 'GET', '/api/v1/namespaces/a/pods/p/log', 'localhost'), true);
});

test('accept: reject wins over accept; methods; an empty accept list accepts nothing', () => {
  const f = { ...defaultRequestFilterOptions(), rejectMethods: makeRegexpArray('POST,PUT,PATCH') };
  assert.equal(accept(f, 'POST', '/api/v1/namespaces', 'localhost'), false);
  assert.equal(accept(f, 'GET', '/api/v1/namespaces', 'localhost'), true);
  assert.equal(accept({ ...f, acceptPaths: [] }, 'GET', '/api', 'localhost'), false);
  assert.equal(accept({ ...f, acceptPaths: makeRegexpArray('^/api/v1/namespaces$') }, 'GET', '/api/v1/pods', 'localhost'), false);
});

test('cleanPath and unescapePath: as Go http.ServeMux and url.URL.Path', () => {
  assert.equal(cleanPath(''), '/');
  assert.equal(cleanPath('//api/v1'), '/api/v1');
  assert.equal(cleanPath('/api/v1/../v1/pods/'), '/api/v1/pods/');
  assert.equal(cleanPath('/a/.'), '/a');
  // A clean path is itself (the same string, not a copy), as path.Clean leaves it.
  for (const clean of ['/', '/api/v1/pods/', '/api/v1/namespaces/a.b/pods/.hidden', '/a..b']) assert.equal(cleanPath(clean), clean);
  assert.equal(cleanPath('/a/..'), '/');
  assert.equal(cleanPath('api/v1'), '/api/v1');
  assert.equal(unescapePath('/api/v1/pods/p/%65xec'), '/api/v1/pods/p/exec');
  assert.equal(unescapePath('/a%2Fb'), '/a/b');
  assert.equal(unescapePath('/a%zz'), undefined);
  assert.equal(unescapePath('/caf%C3%A9'), '/café');
});

async function filtered(): Promise<FastifyInstance> {
  const app = Fastify();
  installRequestFilter(app, defaultRequestFilterOptions());
  app.all('/*', () => 'passed');
  await app.ready();
  return app;
}

test('installRequestFilter: a rejected request is 403 "Forbidden\\n" in plain text, as http.Error writes it', async () => {
  const app = await filtered();
  const res = await app.inject({ method: 'GET', url: '/api/v1/namespaces', headers: { host: 'evil.example:8001' } });
  assert.equal(res.statusCode, 403);
  assert.equal(res.body, 'Forbidden\n');
  assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  const exec = await app.inject({
    method: 'POST',
    url: '/api/v1/namespaces/a/pods/p/exec?command=sh',
    headers: { host: 'localhost:8001' },
  });
  assert.equal(exec.statusCode, 403);
  const escaped = await app.inject({ method: 'POST', url: '/api/v1/namespaces/a/pods/p/%65xec', headers: { host: 'localhost' } });
  assert.equal(escaped.statusCode, 403, 'the decoded path is matched');
  const ok = await app.inject({ method: 'GET', url: '/api/v1/namespaces', headers: { host: '127.0.0.1:8001' } });
  assert.equal(ok.statusCode, 200);
  assert.equal(ok.body, 'passed');
  await app.close();
});

test('installRequestFilter: an unclean path is filtered as spelled and as cleaned, then passed on as spelled', async () => {
  const app = await filtered();
  const res = await app.inject({ method: 'GET', url: '//api/v1/namespaces/a/pods/p/exec?x=1', headers: { host: 'localhost' } });
  assert.equal(res.statusCode, 403, 'cleaned, it is an exec');
  const dotted = await app.inject({ method: 'GET', url: '/api/v1/namespaces/a/pods/p/x/../exec', headers: { host: 'localhost' } });
  assert.equal(dotted.statusCode, 403, 'cleaned, it is an exec');
  const other = await app.inject({ method: 'GET', url: '/api/v1/namespaces//pods', headers: { host: 'localhost' } });
  assert.equal(other.statusCode, 200, 'no redirect: the apiserver answers the path as written');
  assert.equal(other.body, 'passed');
  const bad = await app.inject({ method: 'GET', url: '/api/%zz', headers: { host: 'localhost' } });
  assert.equal(bad.statusCode, 400);
  await app.close();
});

test('makeRegexpArray: an anchored pattern of literals and .* matches as written (rewritten to match in linear time)', () => {
  const [exec] = makeRegexpArray('^/api/.*/pods/.*/exec');
  const [ending] = makeRegexpArray('^/api/.*/pods/.*/exec$');
  assert.ok(exec !== undefined && ending !== undefined);
  const cases: readonly [string, boolean, boolean][] = [
    ['/api/v1/namespaces/a/pods/p/exec', true, true],
    ['/api/v1/namespaces/a/pods/p/exec?x', true, false],
    ['/api//pods//exec', true, true],
    ['/api/pods/exec', false, false],
    // The first /pods/ is not the one that matches: a later one is, and the first still serves.
    ['/api/x/pods/y/pods/z/exec', true, true],
    ['/api/x/exec/pods/y', false, false],
    // The last /exec ends the path ($), though an earlier one is the first seen.
    ['/api/x/pods/y/exec/z/exec', true, true],
    // `.` stops at a line break (a path may hold one once %0A is decoded): only on one line.
    ['/api/x\n/pods/y/exec', false, false],
    ['/api/x/pods/y\n/exec', false, false],
    ['/api/x/pods/y/exec\n', true, false],
  ];
  for (const [path, matches, matchesEnding] of cases) {
    assert.equal(exec.test(path), matches, path);
    assert.equal(new RegExp('^/api/.*/pods/.*/exec').test(path), matches, `as JavaScript's own: ${path}`);
    assert.equal(ending.test(path), matchesEnding, `$: ${path}`);
    assert.equal(new RegExp('^/api/.*/pods/.*/exec$').test(path), matchesEnding, `$, as JavaScript's own: ${path}`);
  }
  assert.equal(makeRegexpArray('(?i)^/API/.*/EXEC')[0]?.test('/api/x/exec'), true, 'flags kept');
  assert.equal(makeRegexpArray('^a\\..*c')[0]?.test('a.bc'), true, 'escapes kept');
  assert.equal(makeRegexpArray('^a\\..*c')[0]?.test('abbc'), false);
  // A final `.*` not held by `$` matches the empty run: kubectl's accept-all `^.*` answers at once.
  const [all, prefix] = makeRegexpArray('^.*,^/api/.*');
  assert.ok(all !== undefined && prefix !== undefined);
  for (const path of ['', '/', '/api/v1', '\n', '/api\n', '/apis']) {
    assert.equal(all.test(path), /^.*/.test(path), path);
    assert.equal(prefix.test(path), /^\/api\/.*/.test(path), path);
  }
});

test('filterRequest: a 1 MiB path of many /pods/ is filtered by the default reject patterns in linear time', async () => {
  // `^/api/.*\/pods/.*\/exec` as written backtracked once per /pods/ over the rest of the path: 9 s at 64 KiB.
  const result = await runsInLinearTime(new URL('../../../src/request/request-filter.ts', import.meta.url), (m: typeof RequestFilter) =>
    m.filterRequest(m.defaultRequestFilterOptions(), 'GET', `/api/${'/pods/'.repeat(2 ** 20 / 6)}`, 'localhost'),
  );
  assert.match(result, /"kind":"accept"/);
});
