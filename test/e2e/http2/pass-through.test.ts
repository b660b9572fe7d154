/**
 * Over HTTP/2: the pass-through (bodies both ways, watches, kubectl, a 503 Status) runs again with the proxy serving HTTPS and the
 * suite's clients speaking h2 to it (test/helpers/http2.ts); its last test fails unless every
 * connection to the proxies negotiated h2.
 */
import { HTTP2_ENV, expectEveryConnectionHttp2 } from '../../helpers/http2.ts';

process.env[HTTP2_ENV] = '1';
await import('../server/pass-through.test.ts');
expectEveryConnectionHttp2();
