import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CliError } from '../../../src/proxy/cli-error.ts';
import { parseMemoryQuantity, parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { PARSE_OPTIONS, PROXY_FLAGS, PROXY_FLAGS_USAGE, SHARED_ONLY_FLAGS, envName } from '../../../src/cli/proxy-flags.ts';
import { configuredCluster } from '../../../src/cli/start.ts';
import { makeRegexpArray } from '../../../src/request/request-filter.ts';

const sources = (res: readonly RegExp[]): string[] => res.map((re) => re.source);

test('proxy options: kubectl proxy defaults', () => {
  const o = parseProxyOptions([], {});
  assert.equal(o.address, '127.0.0.1');
  assert.equal(o.port, 8001);
  assert.equal(o.unixSocket, undefined);
  assert.equal(o.kubeconfig, undefined);
  assert.deepEqual(sources(o.filter.acceptHosts), ['^localhost$', '^127\\.0\\.0\\.1$', '^\\[::1\\]$']);
  assert.deepEqual(sources(o.filter.acceptPaths), sources(makeRegexpArray('^.*')));
  // kubectl's patterns, compiled as the filter compiles them (rewritten to match without backtracking).
  assert.deepEqual(sources(o.filter.rejectPaths), sources(makeRegexpArray('^/api/.*/pods/.*/exec,^/api/.*/pods/.*/attach')));
  assert.deepEqual(sources(o.filter.rejectMethods), ['^$']);
  assert.deepEqual(o.resources, []);
  assert.equal(o.logLevel, 'info');
});

test('proxy options: each flag has a KCP_ env variable; the flag wins; an empty variable is unset', () => {
  assert.equal(envName('accept-hosts'), 'KCP_ACCEPT_HOSTS');
  const env = {
    KCP_PORT: '9000',
    KCP_ADDRESS: '0.0.0.0',
    KCP_TLS_GENERATE: 'true',
    KCP_SHARED: 'true',
    KCP_RESOURCES: 'pods, deployments.apps,pods',
    KCP_LOG_LEVEL: '',
  };
  const fromEnv = parseProxyOptions([], env);
  assert.equal(fromEnv.port, 9000);
  assert.equal(fromEnv.address, '0.0.0.0');
  assert.deepEqual(fromEnv.resources, ['pods', 'deployments.apps']);
  const scoped = parseProxyOptions(['--resources', 'pods:spec.nodeName=node-1+status.phase!=Failed;labels=app in (a+b),services'], {});
  assert.deepEqual(
    scoped.resources,
    ['pods:spec.nodeName=node-1+status.phase!=Failed;labels=app in (a+b)', 'services'],
    'a scope kept as written',
  );
  assert.equal(fromEnv.logLevel, 'info');
  const flags = parseProxyOptions(['--port=0', '--kubeconfig', '/k', '--context', 'c', '--namespace', 'ns-1', '--log-level', 'debug'], env);
  assert.equal(flags.port, 0);
  assert.deepEqual([flags.kubeconfig, flags.context, flags.namespace, flags.logLevel], ['/k', 'c', 'ns-1', 'debug']);
  assert.deepEqual(sources(parseProxyOptions(['--reject-methods', 'POST,PUT'], {}).filter.rejectMethods), ['POST', 'PUT']);
  assert.deepEqual(parseProxyOptions(['--accept-paths='], {}).filter.acceptPaths, [], 'an explicit empty flag is the empty list');
  assert.equal(parseProxyOptions(['-p', '8080'], {}).port, 8080);
});

test('proxy options: bad values are CliErrors that say where the value came from', () => {
  const fails = (argv: string[], env: NodeJS.ProcessEnv, message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(argv, env),
      (error: unknown) => error instanceof CliError && message.test(error.message) && error.hint !== undefined,
    );
  };
  fails(['--port', '70000'], {}, /--port "70000": the port must be a number from 0 to 65535/);
  fails([], { KCP_PORT: 'x' }, /KCP_PORT="x"/);
  fails(['--port', '-1'], {}, /./);
  fails(['--accept-hosts', '^ok$,(bad'], {}, /--accept-hosts .*invalid regular expression "\(bad"/);
  fails(['--resources', 'pods,Deployments'], {}, /not a resource: Deployments/);
  fails(['--resources', 'Pods:spec.nodeName=n1'], {}, /not a resource: Pods:spec.nodeName=n1/);
  fails(['--resources', 'pods:spec.nodeName'], {}, /pods:spec.nodeName: invalid selector/);
  fails(['--resources', 'pods:'], {}, /selects nothing out/);
  fails(['--namespace', 'Bad_NS'], {}, /not a valid namespace name/);
  fails(['--log-level', 'loud'], {}, /unknown log level/);
  fails(['--unix-socket', '/tmp/s', '--port', '9'], {}, /cannot set --unix-socket and --port at the same time/);
  fails(['--nope'], {}, /nope/);
  fails(['extra'], {}, /extra/);
  assert.equal(parseProxyOptions(['--unix-socket', '/tmp/s'], {}).unixSocket, '/tmp/s', 'the default port does not conflict');
});

test('start: a cluster is configured by --kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster env', () => {
  const none = (): boolean => false;
  assert.equal(configuredCluster({ kubeconfig: undefined }, {}, '/home/u', none), undefined);
  assert.equal(configuredCluster({ kubeconfig: '/k' }, {}, '/home/u', none), '/k');
  assert.match(configuredCluster({ kubeconfig: undefined }, { KUBECONFIG: '/e' }, '/home/u', none) ?? '', /\/e/);
  assert.equal(
    configuredCluster({ kubeconfig: undefined }, {}, '/home/u', (p) => p === '/home/u/.kube/config'),
    '/home/u/.kube/config',
  );
  const token = (p: string): boolean => p.endsWith('serviceaccount/token');
  assert.equal(configuredCluster({ kubeconfig: undefined }, {}, '/home/u', token), undefined, 'a token without the service env');
  assert.match(configuredCluster({ kubeconfig: undefined }, { KUBERNETES_SERVICE_HOST: '10.0.0.1' }, '/home/u', token) ?? '', /in-cluster/);
});

test('proxy options: shared mode, its review caches (the apiserver webhook flags and defaults), and its filter defaults', () => {
  assert.equal(parseProxyOptions([], {}).shared, undefined);
  const o = parseProxyOptions(['--shared', '--tls-generate', '--client-ca-file', '/ca.pem', '--auth-token-audiences', 'a, b,a'], {});
  assert.deepEqual(o.shared, {
    clientCaFile: '/ca.pem',
    audiences: ['a', 'b'],
    tokenCacheTtlMs: 120_000,
    authorizedTtlMs: 300_000,
    unauthorizedTtlMs: 30_000,
    tokenReviewLimits: { qpsPerAddress: 1, burstPerAddress: 20, qps: 20, burst: 100, maxInflight: 64 },
    requestHeadLimits: { bytesPerSecond: 64 * 1024, burstBytes: (1 << 20) + 4096, maxInflightBytes: 2 * 1024 * 1024 + 8192 },
    anonymousRefusalLimits: { qpsPerAddress: 2, burstPerAddress: 20 },
    flowRefusalLimits: { qpsPerFlow: 10, burstPerFlow: 100 },
  });
  const flows = parseProxyOptions(['--shared', '--refusals-qps-per-flow', '0'], {}).shared?.flowRefusalLimits;
  assert.deepEqual(flows, { qpsPerFlow: 0, burstPerFlow: 100 });
  const anonymous = parseProxyOptions(['--shared', '--anonymous-refusals-qps-per-address', '0.5'], {
    KCP_ANONYMOUS_REFUSALS_BURST_PER_ADDRESS: '5',
  }).shared?.anonymousRefusalLimits;
  assert.deepEqual(anonymous, { qpsPerAddress: 0.5, burstPerAddress: 5 });
  // Any Host, no path refused: the apiserver authorizes each client, exec and attach included.
  assert.deepEqual(sources(o.filter.acceptHosts), ['^.*$']);
  assert.deepEqual(sources(o.filter.rejectPaths), ['^$']);
  assert.deepEqual(sources(parseProxyOptions(['--shared', '--accept-hosts', '^proxy$'], {}).filter.acceptHosts), ['^proxy$']);
  const ttls = parseProxyOptions([], {
    KCP_SHARED: '1',
    KCP_AUTHENTICATION_TOKEN_WEBHOOK_CACHE_TTL: '10s',
    KCP_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL: '1m30s',
    KCP_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL: '500ms',
  }).shared;
  assert.deepEqual([ttls?.tokenCacheTtlMs, ttls?.authorizedTtlMs, ttls?.unauthorizedTtlMs], [10_000, 90_000, 500]);
  assert.equal(parseProxyOptions(['--shared'], {}).shared?.clientCaFile, undefined, 'plain HTTP on loopback: tokens only');
});

test('proxy options: shared-mode flags without --shared, a client CA without HTTPS, and an apps kubeconfig in shared mode are CliErrors', () => {
  const fails = (argv: string[], message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(argv, {}),
      (error: unknown) => error instanceof CliError && message.test(error.message) && error.hint !== undefined,
    );
  };
  fails(['--client-ca-file', '/ca.pem', '--tls-generate'], /--client-ca-file "\/ca.pem": only for shared mode/);
  fails(['--auth-token-audiences', 'x'], /only for shared mode/);
  fails(['--shared', '--client-ca-file', '/ca.pem'], /--client-ca-file: client certificates need HTTPS/);
  fails(['--shared', '--authorization-webhook-cache-authorized-ttl', '5'], /not a duration/);
  fails(['--shared', '--tls-generate', '--write-kubeconfig', '/k'], /the kubeconfig for apps is for sidecar mode/);
});

test("proxy options: --server and --certificate-authority, kubectl's names, point the proxy at another upstream", () => {
  const o = parseProxyOptions(['--server', 'https://node-proxy.kube-cache-proxy.svc', '--certificate-authority', '/ca.crt'], {});
  assert.deepEqual([o.server, o.certificateAuthority], ['https://node-proxy.kube-cache-proxy.svc', '/ca.crt']);
  assert.equal(parseProxyOptions([], { KCP_SERVER: 'https://10.0.0.1:8443' }).server, 'https://10.0.0.1:8443');
  assert.throws(() => parseProxyOptions(['--server', 'node-proxy:443'], {}), /--server "node-proxy:443": not an http\(s\) URL/);
  assert.throws(() => parseProxyOptions(['--server', 'not a url'], {}), /not a URL/);
});

test("proxy options: --server in plain HTTP only to this host (the proxy's credentials go to it)", () => {
  assert.equal(parseProxyOptions(['--server', 'http://127.0.0.1:8443'], {}).server, 'http://127.0.0.1:8443');
  assert.equal(parseProxyOptions(['--server', 'http://[::1]:8443'], {}).server, 'http://[::1]:8443');
  assert.throws(
    () => parseProxyOptions(['--server', 'http://node-proxy.kcp.svc'], {}),
    /plain HTTP to another host would send the proxy's credentials/,
  );
});

test('proxy options: --memory-limit in bytes or as a Kubernetes quantity (the downward API gives bytes); none: the cgroup decides', () => {
  assert.equal(parseProxyOptions([], {}).memoryLimitBytes, undefined);
  assert.equal(parseProxyOptions(['--memory-limit', '256Mi'], {}).memoryLimitBytes, 256 * 2 ** 20);
  assert.equal(parseProxyOptions([], { KCP_MEMORY_LIMIT: '167772160' }).memoryLimitBytes, 167_772_160);
  assert.equal(parseMemoryQuantity('1.5Gi'), 1.5 * 2 ** 30);
  assert.equal(parseMemoryQuantity('300M'), 300e6);
  assert.equal(parseMemoryQuantity('64k'), 64_000);
  for (const bad of ['', '-1', '0', '12MB', '1e9', 'lots']) assert.equal(parseMemoryQuantity(bad), undefined, bad);
  assert.throws(
    () => parseProxyOptions(['--memory-limit', '12MB'], {}),
    (error: unknown) => error instanceof CliError && /--memory-limit "12MB": not a memory quantity/.test(error.message),
  );
});

test('proxy flags: the table is the one declaration of each flag: parser, help line and KCP_ variable', () => {
  for (const flag of PROXY_FLAGS) {
    assert.match(PROXY_FLAGS_USAGE, new RegExp(`^  (-\\w, )?--${flag.name}\\b`, 'm'), `--${flag.name} has a help line`);
    assert.equal(PARSE_OPTIONS[flag.name].type, flag.type, `--${flag.name} is parsed as a ${flag.type}`);
  }
  // Each string flag is read from its variable when the flag is absent.
  assert.equal(parseProxyOptions([], { [envName('namespace')]: 'ns1' }).namespace, 'ns1');
  assert.equal(parseProxyOptions(['--namespace', 'ns2'], { [envName('namespace')]: 'ns1' }).namespace, 'ns2', 'the flag wins');
  // The shared-only rule comes from the table too.
  assert.deepEqual(SHARED_ONLY_FLAGS, [
    'client-ca-file',
    'auth-token-audiences',
    'authentication-token-webhook-cache-ttl',
    'authorization-webhook-cache-authorized-ttl',
    'authorization-webhook-cache-unauthorized-ttl',
    'max-reviews-inflight-per-flow',
    'token-review-qps-per-address',
    'token-review-burst-per-address',
    'token-review-qps',
    'token-review-burst',
    'max-token-reviews-inflight',
    'anonymous-refusals-qps-per-address',
    'anonymous-refusals-burst-per-address',
    'refusals-qps-per-flow',
    'refusals-burst-per-flow',
    'large-request-heads-per-address',
    'large-request-heads-burst-per-address',
    'max-large-request-heads-inflight-per-address',
    'pool',
    'pool-namespace',
    'pool-advertise',
    'pool-certificate-authority',
    'pool-tls-server-name',
    'pool-lease-duration',
  ]);
});

test('proxy options: per-flow limits (any mode) and TokenReview limits (shared mode), with their defaults; 0 is no limit', () => {
  assert.deepEqual(parseProxyOptions([], {}).flowLimits, { maxRequestsInflight: 100, maxWatches: 96, maxReviewsInflight: 64 });
  const o = parseProxyOptions(
    [
      '--shared',
      '--max-requests-inflight-per-flow',
      '0',
      '--max-watches-per-flow=7',
      '--max-reviews-inflight-per-flow',
      '3',
      '--token-review-qps-per-address',
      '0.5',
      '--token-review-burst-per-address',
      '4',
      '--token-review-qps',
      '0',
      '--token-review-burst',
      '0',
    ],
    { KCP_MAX_TOKEN_REVIEWS_INFLIGHT: '9' },
  );
  assert.deepEqual(o.flowLimits, { maxRequestsInflight: 0, maxWatches: 7, maxReviewsInflight: 3 });
  assert.deepEqual(o.shared?.tokenReviewLimits, { qpsPerAddress: 0.5, burstPerAddress: 4, qps: 0, burst: 0, maxInflight: 9 });
  const fails = (argv: string[], message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(argv, {}),
      (error: unknown) => error instanceof CliError && message.test(error.message) && error.hint !== undefined,
    );
  };
  fails(['--max-watches-per-flow=-1'], /--max-watches-per-flow "-1": not a whole number/);
  fails(['--max-requests-inflight-per-flow', '1.5'], /not a whole number/);
  fails(['--shared', '--token-review-qps', 'fast'], /--token-review-qps "fast": not a rate/);
  fails(['--shared', '--token-review-burst-per-address', '0'], /a burst of 0 would refuse every request/);
  fails(['--shared', '--anonymous-refusals-burst-per-address', '0'], /a burst of 0 would refuse every request/);
  fails(['--token-review-qps', '1'], /only for shared mode/);
  fails(['--max-reviews-inflight-per-flow', '1'], /only for shared mode/);
  // Large request heads: quantities of bytes; a limit smaller than the largest head refuses it for good.
  const heads = parseProxyOptions(
    ['--shared', '--large-request-heads-per-address=512Ki', '--large-request-heads-burst-per-address', '2Mi'],
    { KCP_MAX_LARGE_REQUEST_HEADS_INFLIGHT_PER_ADDRESS: '0' },
  );
  assert.deepEqual(heads.shared?.requestHeadLimits, { bytesPerSecond: 512 * 1024, burstBytes: 2 * 1024 * 1024, maxInflightBytes: 0 });
  fails(['--shared', '--large-request-heads-burst-per-address', '1Mi'], /less than the largest head the proxy takes/);
  fails(['--shared', '--max-large-request-heads-inflight-per-address', '64Ki'], /less than the largest head the proxy takes/);
  fails(['--shared', '--large-request-heads-per-address', 'lots'], /not a quantity of bytes/);
  fails(['--large-request-heads-per-address', '1Mi'], /only for shared mode/);
});

test('proxy options: --http2-max-streams-per-connection, HTTPS only, 1000 by default as 0 is', () => {
  assert.equal(parseProxyOptions(['--tls-generate'], {}).http2MaxStreamsPerConnection, 1000);
  assert.equal(parseProxyOptions(['--tls-generate', '--http2-max-streams-per-connection', '0'], {}).http2MaxStreamsPerConnection, 1000);
  assert.equal(parseProxyOptions(['--tls-generate', '--http2-max-streams-per-connection', '250'], {}).http2MaxStreamsPerConnection, 250);
  assert.equal(parseProxyOptions(['--tls-generate'], { KCP_HTTP2_MAX_STREAMS_PER_CONNECTION: '100' }).http2MaxStreamsPerConnection, 100);
  const fails = (argv: string[], message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(argv, {}),
      (error: unknown) => error instanceof CliError && message.test(error.message) && error.hint !== undefined,
    );
  };
  fails(['--tls-generate', '--http2-max-streams-per-connection', 'lots'], /not a stream count/);
  fails(['--tls-generate', '--http2-max-streams-per-connection', '4294967296'], /not a stream count/);
  fails(['--http2-max-streams-per-connection', '100'], /only for HTTPS serving/);
});

test('proxy options: --tls-handshakes-per-second, HTTPS only, 200 by default; 0 is no pacing', () => {
  const tls = ['--tls-cert-file', 'c.pem', '--tls-private-key-file', 'k.pem'];
  assert.equal(parseProxyOptions(tls, {}).tlsHandshakesPerSecond, 200);
  assert.equal(parseProxyOptions([...tls, '--tls-handshakes-per-second', '50'], {}).tlsHandshakesPerSecond, 50);
  assert.equal(parseProxyOptions(['--tls-generate'], { KCP_TLS_HANDSHAKES_PER_SECOND: '0' }).tlsHandshakesPerSecond, 0);
  const fails = (argv: string[], message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(argv, {}),
      (error: unknown) => error instanceof CliError && message.test(error.message) && error.hint !== undefined,
    );
  };
  fails([...tls, '--tls-handshakes-per-second', 'many'], /--tls-handshakes-per-second "many": not a rate/);
  fails(['--tls-handshakes-per-second', '100'], /only for HTTPS serving/);
});

test('proxy options: --pool, shared mode only, with its advertised URL; the election timing follows the lease duration', () => {
  assert.equal(parseProxyOptions(['--shared'], {}).pool, undefined);
  const base = ['--shared', '--pool', 'zone-a', '--pool-advertise', 'https://10.0.0.7:8443/'];
  assert.deepEqual(parseProxyOptions(base, {}).pool, {
    name: 'zone-a',
    namespace: 'kube-system',
    advertise: 'https://10.0.0.7:8443',
    certificateAuthority: undefined,
    tlsServerName: undefined,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
  });
  const short = parseProxyOptions([...base, '--pool-lease-duration', '6s'], {
    KCP_POOL_NAMESPACE: 'kcp',
    KCP_POOL_TLS_SERVER_NAME: 'node.kcp.svc',
  }).pool;
  assert.deepEqual(
    [short?.namespace, short?.tlsServerName, short?.leaseDurationMs, short?.renewDeadlineMs, short?.retryPeriodMs],
    ['kcp', 'node.kcp.svc', 6_000, 4_000, 800],
  );
  const fails = (args: string[], message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(args, {}),
      (e: unknown) => e instanceof CliError && message.test(e.message),
    );
  };
  fails(['--pool', 'a', '--pool-advertise', 'https://10.0.0.7:8443'], /--pool "a": only for shared mode/);
  fails(['--shared', '--pool', 'a'], /need this proxy's URL/);
  fails(['--shared', '--pool', 'a', '--pool-advertise', 'http://127.0.0.1:8001'], /not an https URL/);
  fails(['--shared', '--pool', 'Zone_A', '--pool-advertise', 'https://10.0.0.7:8443'], /not a valid pool name/);
  fails(['--shared', '--pool-advertise', 'https://10.0.0.7:8443'], /only with --pool/);
  fails([...base, '--pool-lease-duration', '1500ms'], /whole seconds/);
});

test("proxy options: boolean flags take pflag's =true and =false (the last one given wins, over its variable); = with anything else is an error", () => {
  assert.ok(parseProxyOptions(['--shared=true'], {}).shared !== undefined);
  assert.ok(parseProxyOptions(['--shared=1'], {}).shared !== undefined);
  assert.equal(parseProxyOptions(['--shared=false'], {}).shared, undefined);
  assert.equal(parseProxyOptions(['--shared=false'], { KCP_SHARED: 'true' }).shared, undefined, 'the flag wins over its variable');
  assert.equal(parseProxyOptions(['--shared', '--shared=false'], {}).shared, undefined, 'the last one wins');
  assert.ok(parseProxyOptions(['--shared=false', '--shared'], {}).shared !== undefined, 'the last one wins');
  assert.deepEqual(parseProxyOptions(['--tls-generate=True'], {}).tls, { kind: 'generate' });
  assert.equal(parseProxyOptions(['--tls-generate=F'], {}).tls, undefined);
  assert.equal(parseProxyOptions(['--help=false'], {}).help, false);
  assert.throws(
    () => parseProxyOptions(['--shared=yes'], {}),
    (error: unknown) =>
      error instanceof CliError &&
      error.message === 'invalid argument "yes" for "--shared" flag: strconv.ParseBool: parsing "yes": invalid syntax' &&
      error.hint === 'Use --shared, --shared=true or --shared=false.',
  );
  // A string flag's `=` is its value, as before.
  assert.equal(parseProxyOptions(['--port=0'], {}).port, 0);
});

test('proxy options: --metrics-bind-address as kube-proxy reads it (IP:PORT, [IPv6]:PORT) plus :PORT and 0; --shutdown-delay-duration a Go duration', () => {
  assert.equal(parseProxyOptions([], {}).metricsBindAddress, undefined);
  assert.deepEqual(parseProxyOptions(['--metrics-bind-address', '0.0.0.0:10249'], {}).metricsBindAddress, { host: '0.0.0.0', port: 10249 });
  assert.deepEqual(parseProxyOptions(['--metrics-bind-address', '[::]:10249'], {}).metricsBindAddress, { host: '::', port: 10249 });
  assert.deepEqual(parseProxyOptions([], { KCP_METRICS_BIND_ADDRESS: ':0' }).metricsBindAddress, { host: undefined, port: 0 });
  assert.equal(parseProxyOptions(['--metrics-bind-address', '0'], {}).metricsBindAddress, undefined);
  assert.equal(parseProxyOptions(['--metrics-bind-address', ''], {}).metricsBindAddress, undefined);
  for (const bad of ['10249', 'localhost:10249', '0.0.0.0:70000', '::1:10249', '0.0.0.0:']) {
    assert.throws(
      () => parseProxyOptions(['--metrics-bind-address', bad], {}),
      (error: unknown) => error instanceof CliError && /not an IP:PORT/.test(error.message),
      bad,
    );
  }
  assert.equal(parseProxyOptions([], {}).shutdownDelayMs, 0);
  assert.equal(parseProxyOptions(['--shutdown-delay-duration', '5s'], {}).shutdownDelayMs, 5_000);
  assert.throws(
    () => parseProxyOptions(['--shutdown-delay-duration', '5'], {}),
    (error: unknown) => error instanceof CliError && /not a duration/.test(error.message),
  );
});

test("proxy options: --tls-min-version and --tls-cipher-suites in the apiserver's names, HTTPS only", () => {
  assert.equal(parseProxyOptions(['--tls-generate'], {}).tlsMinVersion, 'TLSv1.2');
  assert.equal(parseProxyOptions(['--tls-generate'], {}).tlsCiphers, undefined);
  const o = parseProxyOptions(
    [
      '--tls-generate',
      '--tls-min-version',
      'VersionTLS13',
      '--tls-cipher-suites',
      'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256',
    ],
    {},
  );
  assert.equal(o.tlsMinVersion, 'TLSv1.3');
  assert.equal(o.tlsCiphers, 'ECDHE-RSA-AES128-GCM-SHA256');
  const fails = (argv: string[], message: RegExp): void => {
    assert.throws(
      () => parseProxyOptions(argv, {}),
      (error: unknown) => error instanceof CliError && message.test(error.message),
    );
  };
  fails(['--tls-generate', '--tls-min-version', 'TLSv1.3'], /--tls-min-version "TLSv1.3": unknown tls version "TLSv1.3"/);
  fails(['--tls-generate', '--tls-cipher-suites', 'TLS_FOO'], /Cipher suite TLS_FOO not supported or doesn't exist/);
  fails(['--tls-min-version', 'VersionTLS13'], /only for HTTPS serving/);
  fails(['--tls-cipher-suites', 'TLS_AES_128_GCM_SHA256'], /only for HTTPS serving/);
});

test("proxy options: klog's -v (4 and above: debug) and component-base's --logging-format", () => {
  assert.equal(parseProxyOptions([], {}).logLevel, 'info');
  assert.equal(parseProxyOptions([], {}).loggingFormat, 'text');
  assert.equal(parseProxyOptions(['-v', '2'], {}).logLevel, 'info');
  assert.equal(parseProxyOptions(['-v', '4'], {}).logLevel, 'debug');
  assert.equal(parseProxyOptions(['--v=5', '--log-level', 'warn'], {}).logLevel, 'debug');
  assert.equal(parseProxyOptions(['--log-level', 'warn'], {}).logLevel, 'warn');
  assert.equal(parseProxyOptions(['--logging-format=json'], {}).loggingFormat, 'json');
  assert.equal(parseProxyOptions([], { KCP_LOGGING_FORMAT: 'json' }).loggingFormat, 'json');
  assert.throws(
    () => parseProxyOptions(['--logging-format', 'logfmt'], {}),
    (error: unknown) => error instanceof CliError && error.message === '--logging-format "logfmt": unsupported log format',
  );
  assert.throws(
    () => parseProxyOptions(['-v', 'debug'], {}),
    (error: unknown) => error instanceof CliError && /not a verbosity/.test(error.message),
  );
});

test('proxy options: --fallback-to-apiserver, on by default with --server, only with it', () => {
  assert.equal(parseProxyOptions(['--server', 'https://node-proxy:443'], {}).fallbackToApiserver, true);
  assert.equal(parseProxyOptions(['--server', 'https://node-proxy:443', '--fallback-to-apiserver=false'], {}).fallbackToApiserver, false);
  assert.equal(parseProxyOptions([], {}).fallbackToApiserver, true);
  assert.throws(
    () => parseProxyOptions(['--fallback-to-apiserver'], {}),
    (error: unknown) => error instanceof CliError && /--fallback-to-apiserver: only with --server/.test(error.message),
  );
});

test('proxy options: --upstream-http2, the default (undefined) unless given, =false or KCP_UPSTREAM_HTTP2 to turn it off', () => {
  assert.equal(parseProxyOptions([], {}).upstreamHttp2, undefined);
  assert.equal(parseProxyOptions(['--upstream-http2'], {}).upstreamHttp2, true);
  assert.equal(parseProxyOptions(['--upstream-http2=false'], {}).upstreamHttp2, false);
  assert.equal(parseProxyOptions([], { KCP_UPSTREAM_HTTP2: 'false' }).upstreamHttp2, false);
  assert.throws(
    () => parseProxyOptions(['--upstream-http2=maybe'], {}),
    (error: unknown) => error instanceof CliError && /--upstream-http2/.test(error.message),
  );
});

test('proxy options: --state-dir and --state-save-period (flags or KCP_ variables; 0 saves only at shutdown)', () => {
  const none = parseProxyOptions([], {});
  assert.equal(none.stateDir, undefined);
  assert.equal(none.stateSavePeriodMs, undefined, 'the default applies');
  const o = parseProxyOptions(['--state-dir', '/var/lib/kcp', '--state-save-period', '30s'], {});
  assert.equal(o.stateDir, '/var/lib/kcp');
  assert.equal(o.stateSavePeriodMs, 30_000);
  assert.equal(parseProxyOptions([], { KCP_STATE_DIR: '/state', KCP_STATE_SAVE_PERIOD: '0' }).stateSavePeriodMs, 0);
  assert.throws(() => parseProxyOptions(['--state-save-period', 'soon'], {}), /--state-save-period "?soon"?: not a duration/);
  assert.throws(() => parseProxyOptions(['--state-dir', ''], {}), CliError);
});

test('proxy options: --compress-loopback (KCP_COMPRESS_LOOPBACK) gzips loopback clients too; off by default', () => {
  assert.equal(parseProxyOptions([], {}).compressLoopback, false);
  assert.equal(parseProxyOptions(['--compress-loopback'], {}).compressLoopback, true);
  assert.equal(parseProxyOptions(['--compress-loopback=false'], { KCP_COMPRESS_LOOPBACK: 'true' }).compressLoopback, false);
  assert.equal(parseProxyOptions([], { KCP_COMPRESS_LOOPBACK: 'true' }).compressLoopback, true);
  assert.throws(() => parseProxyOptions([], { KCP_COMPRESS_LOOPBACK: 'yes' }), CliError);
});
