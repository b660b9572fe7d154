/**
 * Chaining: the WATCH conformance suite (events, selectors, 410s, WatchList and its end bookmark,
 * bookmarks before a timeout, the legacy paths, kubectl get -w) runs again through proxy -> proxy
 * -> apiserver. Its assertions compare what the outer proxy streams with what the apiserver
 * streams, and that the outer proxy served each watch from its own cache.
 */
import { CHAIN_ENV } from '../../helpers/caching-proxy.ts';

process.env[CHAIN_ENV] = '1';
await import('../server/watch-conformance.test.ts');
