import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SelectorParseError } from '../../../src/selector/selector-error.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { RequestSelectors, SelectorScope } from '../../../src/cache/selector-scope.ts';
import { describeSelectors, newSelectorScope, parseScopeEntry, scopeCovers, scopeNarrowness } from '../../../src/cache/selector-scope.ts';

const PODS = selectableFieldsFor('', 'pods', true).conversion;

function scope(fieldSelector: string, labelSelector = ''): SelectorScope {
  return newSelectorScope({ fieldSelector, labelSelector }, PODS);
}

function covers(s: SelectorScope, fieldSelector: string, labelSelector = ''): boolean {
  const request: RequestSelectors = { fieldSelector, labelSelector };
  return scopeCovers(s, request, PODS);
}

test('parseScopeEntry: a resource, then after a colon a field selector and an optional ;labels= clause, with + for commas', () => {
  assert.deepEqual(parseScopeEntry('pods'), { name: 'pods', scope: undefined });
  assert.deepEqual(parseScopeEntry('pods:spec.nodeName=node-1'), {
    name: 'pods',
    scope: { fieldSelector: 'spec.nodeName=node-1', labelSelector: '' },
  });
  assert.deepEqual(parseScopeEntry('pods:spec.nodeName=n1+status.phase!=Succeeded;labels=app=web+tier in (a+b)'), {
    name: 'pods',
    scope: { fieldSelector: 'spec.nodeName=n1,status.phase!=Succeeded', labelSelector: 'app=web,tier in (a,b)' },
  });
  assert.deepEqual(parseScopeEntry('deployments.apps:labels=app=web'), {
    name: 'deployments.apps',
    scope: { fieldSelector: '', labelSelector: 'app=web' },
  });
  assert.throws(() => parseScopeEntry('pods:'), /selects nothing out/);
  assert.throws(() => parseScopeEntry('pods:spec.nodeName'), SelectorParseError);
  assert.throws(() => parseScopeEntry('pods:labels=a in (b'), SelectorParseError);
});

test("newSelectorScope: field names go through the type's conversion (and are refused as the apiserver refuses them)", () => {
  const s = scope('spec.host=n1');
  assert.deepEqual(s.fields.requirements, [{ field: 'spec.nodeName', operator: '=', value: 'n1' }]);
  assert.equal(s.fieldSelector, 'spec.host=n1', 'sent upstream as written');
  assert.throws(() => scope('spec.nothing=x'), /field label not supported: spec.nothing/);
  assert.equal(scopeNarrowness(scope('spec.nodeName=n1', 'app=web')), 2);
  assert.equal(describeSelectors(scope('spec.nodeName=n1', 'app=web')), 'spec.nodeName=n1;labels=app=web');
  assert.equal(describeSelectors(scope('spec.nodeName=n1')), 'spec.nodeName=n1');
});

test('scopeCovers: a request is covered when it has every requirement of the scope, whatever else it asks', () => {
  const node = scope('spec.nodeName=n1');
  assert.equal(covers(node, 'spec.nodeName=n1'), true, 'the same selector');
  assert.equal(covers(node, 'spec.nodeName==n1'), true, '== is =');
  assert.equal(covers(node, 'spec.host=n1'), true, "the type's alias of the same field");
  assert.equal(covers(node, 'spec.nodeName=n1,status.phase!=Succeeded'), true, 'narrower');
  assert.equal(covers(node, 'status.phase!=Succeeded,spec.nodeName=n1'), true, 'in any order');
  assert.equal(covers(node, 'spec.nodeName=n1', 'app=web'), true, 'narrower by labels');
  assert.equal(covers(node, ''), false, 'all pods');
  assert.equal(covers(node, 'spec.nodeName=n2'), false, "another node's pods");
  assert.equal(covers(node, 'spec.nodeName!=n1'), false, 'the opposite');
  assert.equal(covers(node, 'status.phase=Running'), false, 'another field only');
  assert.equal(covers(node, 'spec.nodeName=n1,spec.nodeName=n2'), true, 'contradictory: selects nothing, which the scope holds too');
  assert.equal(covers(node, 'spec.nodeName'), false, "a selector that does not parse is the apiserver's to refuse");
  assert.equal(covers(node, 'spec.unknown=x,spec.nodeName=n1'), false, "a field the type does not select is the apiserver's to refuse");

  const labelled = scope('', 'app=web,tier');
  assert.equal(covers(labelled, '', 'app=web,tier'), true);
  assert.equal(covers(labelled, '', 'tier,app==web,env!=prod'), true, '== is =, and narrower');
  assert.equal(covers(labelled, '', 'app in (web),tier'), true, 'an in of one value is =');
  assert.equal(covers(labelled, 'spec.nodeName=n1', 'app=web,tier'), true, 'narrower by a field');
  assert.equal(covers(labelled, '', 'app=web'), false, 'tier missing');
  assert.equal(covers(labelled, '', 'app in (web,db),tier'), false, 'wider than app=web');
  assert.equal(covers(labelled, '', 'app=db,tier'), false);
  assert.equal(covers(labelled, '', 'app=web,!tier'), false, 'the opposite of tier');

  const notIn = scope('', 'env!=prod');
  assert.equal(covers(notIn, '', 'env notin (prod)'), true, 'a notin of one value is !=');
  assert.equal(covers(notIn, '', 'env notin (prod,dev)'), false, 'syntactic: a wider notin is not matched');

  const both = scope('spec.nodeName=n1', 'app=web');
  assert.equal(covers(both, 'spec.nodeName=n1', 'app=web'), true);
  assert.equal(covers(both, 'spec.nodeName=n1'), false, 'labels missing');
  assert.equal(covers(both, '', 'app=web'), false, 'fields missing');
});
