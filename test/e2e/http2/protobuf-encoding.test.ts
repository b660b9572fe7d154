/**
 * Over HTTP/2: the protobuf encoder against the apiserver's bytes runs again with the proxy serving HTTPS and the
 * suite's clients speaking h2 to it (test/helpers/http2.ts); its last test fails unless every
 * connection to the proxies negotiated h2.
 */
import { HTTP2_ENV, expectEveryConnectionHttp2 } from '../../helpers/http2.ts';

process.env[HTTP2_ENV] = '1';
await import('../protobuf/encoding.test.ts');
expectEveryConnectionHttp2();
