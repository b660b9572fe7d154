/**
 * `@kube-cache-proxy/client/workqueue`: client-go's workqueue (k8s.io/client-go/util/workqueue): the
 * deduplicating queue (fair, stingy), the delaying queue, the rate-limiting queue, its four rate
 * limiters and their default, and the `workqueue_*` metrics. See docs/workqueue.md for what it
 * mirrors, the API and an example.
 *
 * @example
 * ```ts
 * import { defaultControllerRateLimiter, newRateLimitingQueue } from '@kube-cache-proxy/client/workqueue';
 *
 * const queue = newRateLimitingQueue<string>(defaultControllerRateLimiter(), { name: 'pods' });
 * queue.add('default/web-0');
 * for (;;) {
 *   const next = await queue.get();
 *   if (next.shutdown) break;
 *   try {
 *     await reconcile(next.item);
 *     queue.forget(next.item);
 *   } catch {
 *     queue.addRateLimited(next.item);
 *   } finally {
 *     queue.done(next.item);
 *   }
 * }
 * ```
 *
 * @module @kube-cache-proxy/client/workqueue
 * @document ../../docs/workqueue.md
 */
export * from '../workqueue/index.ts';
