/**
 * The informers' metrics in client-go 1.37's shape (src/library/informer-metrics.ts) and
 * component-base's Prometheus names (src/library/informer-prometheus-metrics.ts): a named factory's
 * informer reports its FIFO's queued items and processing latency and its store's resourceVersion;
 * an unnamed factory's reports nothing, as in client-go.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Registry } from 'prom-client';
import { newDeltaFIFO } from '../../../src/informer/delta-fifo.ts';
import { resourceVersionForMetric } from '../../../src/library/informer-metrics.ts';
import { newPrometheusInformerMetricsProvider } from '../../../src/library/prometheus.ts';
import type { InformerFactorySettings } from '../../../src/library/typed-factory.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flushUntil, obj, settles } from '../../helpers/scripted-lister-watcher.ts';

function pod(name: string, rv: number): Record<string, unknown> {
  return { metadata: { name, namespace: 'a', resourceVersion: String(rv), uid: name }, spec: { containers: [] } };
}

/** A factory over an upstream that lists two pods at `listRv`, started and synced. */
async function syncedFactory(t: TestContext, listRv: string, settings: InformerFactorySettings): Promise<void> {
  const up = newFakeUpstream({
    respond: () =>
      jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: listRv },
        items: [pod('web-0', 5), pod('web-1', 6)],
      }),
  });
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, clock: new FakeClock(), ...settings }, () => Promise.resolve());
  t.after(() => factory.shutdown());
  const pods = factory.informerFor({ version: 'v1', resource: 'pods' });
  let handled = 0;
  pods.addEventHandler({
    onAdd: () => {
      handled++;
    },
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  await flushUntil('both adds', () => handled === 2);
}

test('informer metrics: a named factory reports component-base names, labelled by name, group, version and resource', async (t) => {
  const registry = new Registry();
  await syncedFactory(t, '1234567890123456789', { informerName: 'ctl', metricsProvider: newPrometheusInformerMetricsProvider(registry) });
  const labels = 'name="ctl",group="",version="v1",resource="pods"';
  const text = await registry.metrics();
  assert.match(text, /# HELP informer_queued_items Number of items currently queued in the FIFO\./);
  assert.match(text, new RegExp(`^informer_queued_items\\{${labels}\\} 0$`, 'm'), 'the FIFO drained');
  assert.match(text, new RegExp(`^informer_processing_latency_seconds_count\\{${labels}\\} 2$`, 'm'), 'one observation per popped item');
  assert.match(
    text,
    new RegExp(`^informer_processing_latency_seconds_bucket\\{le="0.001",${labels}\\} 2$`, 'm'),
    "component-base's buckets",
  );
  assert.match(
    text,
    new RegExp(`^informer_store_resource_version\\{${labels}\\} 567890123456789$`, 'm'),
    'the 15 least significant digits of the store RV',
  );
});

test('informer metrics: an unnamed factory measures nothing (client-go: only reserved names); a second provider on a registry reuses its metrics', async (t) => {
  const registry = new Registry();
  const provider = newPrometheusInformerMetricsProvider(registry);
  await syncedFactory(t, '10', { metricsProvider: provider });
  const text = await registry.metrics();
  assert.doesNotMatch(text, /^informer_\w+\{/m, 'no series');
  assert.doesNotThrow(() => newPrometheusInformerMetricsProvider(registry));
});

test('informer metrics: the DeltaFIFO sets the queued items at each change of their number and times each pop on its clock', async () => {
  const clock = new FakeClock();
  const queued: number[] = [];
  const latencies: number[] = [];
  const fifo = newDeltaFIFO({
    clock,
    metrics: {
      queuedItems: (n) => {
        queued.push(n);
      },
      processingLatency: (s) => {
        latencies.push(s);
      },
    },
  });
  fifo.add(obj('a', 'x', '1'));
  fifo.update(obj('a', 'x', '2'));
  fifo.add(obj('a', 'y', '3'));
  await settles(
    fifo.pop(() => {
      clock.step(250);
    }),
    'pop()',
  );
  assert.deepEqual(queued, [1, 2, 1], 'a new key, a second key, a pop; an update of a queued key changes nothing');
  assert.deepEqual(latencies, [0.25]);
});

test('informer metrics: resourceVersionForMetric keeps 15 digits, reads "" as 0 and refuses what is not a number', () => {
  assert.equal(resourceVersionForMetric(''), 0);
  assert.equal(resourceVersionForMetric('42'), 42);
  assert.equal(resourceVersionForMetric('1234567890123456789'), 567890123456789);
  assert.equal(resourceVersionForMetric('abc'), undefined);
});
