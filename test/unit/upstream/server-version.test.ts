import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MIN_KUBERNETES_MINOR, parseServerVersion, versionWarning } from '../../../src/upstream/server-version.ts';

test("parseServerVersion: version.Info as the apiserver writes it (major and minor as strings, a distribution's '+' dropped)", () => {
  assert.deepEqual(parseServerVersion('{"major":"1","minor":"37","gitVersion":"v1.37.2"}'), { gitVersion: 'v1.37.2', major: 1, minor: 37 });
  assert.deepEqual(parseServerVersion('{"major":"1","minor":"28+","gitVersion":"v1.28.9-eks-1"}'), {
    gitVersion: 'v1.28.9-eks-1',
    major: 1,
    minor: 28,
  });
  for (const bad of ['', 'not json', '{}', '{"major":1,"minor":29}', '{"major":"one","minor":"29"}'])
    assert.equal(parseServerVersion(bad), undefined, bad);
});

test('versionWarning: none from 1.29 on; a line naming the release and the oldest supported before it', () => {
  assert.equal(MIN_KUBERNETES_MINOR, 29);
  assert.equal(versionWarning({ gitVersion: 'v1.29.0', major: 1, minor: 29 }), undefined);
  assert.equal(versionWarning({ gitVersion: 'v1.37.2', major: 1, minor: 37 }), undefined);
  assert.equal(versionWarning({ gitVersion: 'v2.0.0', major: 2, minor: 0 }), undefined);
  assert.match(
    versionWarning({ gitVersion: 'v1.28.9', major: 1, minor: 28 }) ?? '',
    /^the apiserver is Kubernetes v1\.28\.9, older than 1\.29, /,
  );
});
