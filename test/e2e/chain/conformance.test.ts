/**
 * Chaining: the GET/LIST conformance suite (RVs, paging and continue tokens, 410s, 504s, 422s,
 * custom resources) runs again through proxy -> proxy -> apiserver (a sidecar in front of a node
 * proxy). Its assertions compare what the outer proxy answers with what the apiserver answers,
 * and that the outer proxy answered from its own cache where it must.
 */
import { CHAIN_ENV } from '../../helpers/caching-proxy.ts';

process.env[CHAIN_ENV] = '1';
await import('../server/conformance.test.ts');
