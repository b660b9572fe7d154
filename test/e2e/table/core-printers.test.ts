/**
 * The core group's printers print what the apiserver prints, for objects made in a test namespace.
 */
import { test } from 'node:test';
import { printerFor } from '../../../src/table/printers/index.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { apiserverTable, assertPrintsAsApiserver } from '../../helpers/table-compare.ts';

const shared = useSharedAdmin();

test('printers: configmaps', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'empty' } });
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'some' },
    data: { a: '1', b: '2' },
    binaryData: { c: 'AAE=' },
  });
  const printer = printerFor('', 'configmaps');
  if (printer === undefined) throw new Error('no configmaps printer');
  assertPrintsAsApiserver(printer, await apiserverTable(shared.admin, `/api/v1/namespaces/${ns}/configmaps`), 'configmaps');
});
