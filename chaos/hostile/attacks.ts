/**
 * The attacks of the hostile-client suite, each from one client of the shared proxy, each at what
 * one tenant can send: requests within the apiserver's own limits (a request's head up to Go's
 * 1 MiB MaxHeaderBytes, the apiserver's grammar for selectors and continue tokens), as fast as one
 * client gets answers. Each attack reads the Services of the attacker's namespace where it needs
 * a cached type (never the good clients' pods and ConfigMaps, so that the proxy's counters of
 * those are the good clients' own).
 *
 * An attack is prepared once per run (what it needs in the cluster), then run for a phase
 * against a fresh proxy; `check` looks, after the phase, for a harm of its own that the common
 * figures cannot show.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { Dispatcher } from 'undici';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { apiserverRequests, kube } from '../../test/helpers/kube.ts';
import { metricSum } from '../../test/helpers/metrics-text.ts';
import type { AttackName } from './options.ts';
import type { PodBackend } from './pod-backend.ts';
import { startPodBackend } from './pod-backend.ts';
import type { Tenants } from './tenants.ts';
import { serviceName } from './tenants.ts';

export interface AttackEnv {
  /** The shared proxy, https://HOST:PORT (the same across its restarts). */
  readonly url: string;
  /** Its CA (PEM). */
  readonly ca: string;
  readonly tenants: Tenants;
  /** Straight to the apiserver, as the admin. */
  readonly admin: UpstreamClient;
  readonly log: (line: string) => void;
}

export interface AttackOutcome {
  /** Requests the attacker sent (a watch is one). */
  readonly sent: number;
  /** Its answers, by status code, or by error name for requests that got none. */
  readonly answers: Readonly<Record<string, number>>;
  /** The attack's own figure, printed beside the common ones. */
  readonly effect: string;
}

/** What check() may read: the proxy the phase ran against. */
export interface CheckedProxy {
  metrics(): Promise<string | undefined>;
}

export interface PreparedAttack {
  /**
   * Attacks until `stop` aborts (the end of the attack), sending nothing new after it, and ends
   * its requests in flight; what it holds open by design (watches) it keeps until `release`
   * aborts (the end of the hold, while the proxy's held memory is read), then returns.
   */
  run(stop: AbortSignal, release: AbortSignal): Promise<AttackOutcome>;
  /** After the phase, on the same proxy: broken bounds of the attack's own (none: []). */
  check?(proxy: CheckedProxy): Promise<string[]>;
  /** Removes what prepare() made. */
  close(): Promise<void>;
}

export interface Attack {
  readonly name: AttackName;
  /** One line: what the client sends. */
  readonly what: string;
  /** Readies the attack; a string says why it cannot run here (the phase is then skipped, never passed). */
  prepare(env: AttackEnv): Promise<PreparedAttack | string>;
}

/** Go's http.Server MaxHeaderBytes (apiserver secure_serving.go: 1 << 20): the most a request's head may hold. */
const GO_MAX_HEADER_BYTES = 1 << 20;
/** Room in the head for the request line's method and version and the other headers (a token is ~1 KiB). */
const HEAD_ROOM_BYTES = 8 * 1024;
/**
 * The attacker speaks HTTP/1.1, whose request head Go bounds by MaxHeaderBytes (undici would
 * offer h2 by ALPN, where a ~1 MiB head is refused by the client's own frame limits).
 */
const HTTP1 = { allowH2: false } as const;
/** An attacker's request is given up after this (the phase's end ends it sooner). */
const ATTACK_REQUEST_TIMEOUT_MS = 120_000;

/** The answer of a request still waiting for one when the phase ended. */
const UNANSWERED = 'unanswered at the end';

/** Counts answers by status code, or by the error's name. */
function newAnswers(): { add(key: string | number): void; total(): number; get(): Record<string, number> } {
  const answers: Record<string, number> = {};
  return {
    add(key) {
      answers[String(key)] = (answers[String(key)] ?? 0) + 1;
    },
    total: () => Object.values(answers).reduce((a, b) => a + b, 0),
    get: () => ({ ...answers }),
  };
}

/** Whether `signal` has aborted: a call, as the value changes across awaits, which narrowing does not see. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function errorName(error: unknown): string {
  if (error instanceof Error) return 'code' in error && typeof error.code === 'string' ? error.code : error.name;
  return 'error';
}

/**
 * `workers` loops, each sending `next(i)` (the i-th request of the attack) one at a time until
 * `signal` aborts; counts what each got.
 */
async function flood(
  env: AttackEnv,
  signal: AbortSignal,
  workers: number,
  next: (i: number) => { path: string; headers: Record<string, string> },
): Promise<{ sent: number; answers: Record<string, number> }> {
  const dispatcher = new Agent({ ...HTTP1, connect: { ca: env.ca }, headersTimeout: ATTACK_REQUEST_TIMEOUT_MS });
  const answers = newAnswers();
  let index = 0;
  const worker = async (): Promise<void> => {
    while (!signal.aborted) {
      const { path, headers } = next(index++);
      try {
        const res = await request(`${env.url}${path}`, {
          dispatcher,
          headers,
          signal: AbortSignal.any([signal, AbortSignal.timeout(ATTACK_REQUEST_TIMEOUT_MS)]),
        });
        await res.body.dump({ limit: Infinity });
        answers.add(res.statusCode);
      } catch (error) {
        // Still unanswered when the phase ended: counted as such.
        if (aborted(signal)) {
          answers.add(UNANSWERED);
          break;
        }
        answers.add(errorName(error));
        // A refused connection (the proxy gone) is retried without spinning.
        await sleep(100, undefined, { signal }).catch(() => undefined);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    await dispatcher.destroy();
  }
  return { sent: answers.total(), answers: answers.get() };
}

function answersText(answers: Readonly<Record<string, number>>): string {
  return Object.entries(answers)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k}×${v.toLocaleString('en-US')}`)
    .join(' ');
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}`, accept: 'application/json' });

/** 1. The SubjectAccessReview cache: every GET a distinct ~1 MiB key, every one denied. */
const sarNames: Attack = {
  name: 'sar-names',
  what: 'GETs of Services with distinct ~1 MiB names and namespaces (400 KB + 600 KB) from a token with no rights, 4 at a time',
  prepare(env) {
    const namespaceBytes = 400_000;
    const nameBytes = GO_MAX_HEADER_BYTES - HEAD_ROOM_BYTES - namespaceBytes - 64;
    const pad = 'a'.repeat(nameBytes);
    const nsPad = 'n'.repeat(namespaceBytes);
    return Promise.resolve({
      async run(signal) {
        const { sent, answers } = await flood(env, signal, 4, (i) => ({
          path: `/api/v1/namespaces/${nsPad}${String(i)}/services/${pad}${String(i)}`,
          headers: bearer(env.tenants.noRightsToken),
        }));
        return { sent, answers, effect: answersText(answers) };
      },
      close: () => Promise.resolve(),
    });
  },
};

/** 2. TokenReviews: every request a bearer string never seen, from a client with no account at all. */
const tokenFlood: Attack = {
  name: 'token-flood',
  what: 'LISTs of Services, each with a distinct made-up bearer token, 8 at a time',
  prepare(env) {
    const salt = randomBytes(6).toString('hex');
    return Promise.resolve({
      async run(signal) {
        const before = await apiserverRequests(env.admin, 'POST', 'tokenreviews');
        const started = performance.now();
        const { sent, answers } = await flood(env, signal, 8, (i) => ({
          path: `/api/v1/namespaces/${env.tenants.attackNamespace}/services`,
          headers: bearer(`hostile.${salt}.${String(i)}`),
        }));
        const seconds = (performance.now() - started) / 1000;
        const reviews = (await apiserverRequests(env.admin, 'POST', 'tokenreviews')) - before;
        return {
          sent,
          answers,
          effect: `${answersText(answers)}; apiserver TokenReviews ${reviews.toLocaleString('en-US')} (${(reviews / seconds).toFixed(0)}/s)`,
        };
      },
      close: () => Promise.resolve(),
    });
  },
};

/** Clauses of the Accept attack: each `x/y;q=0.NNNNNN,` (15 bytes), q rising, as many as ~1 MB holds. */
const ACCEPT_CLAUSES = 66_000;

/** 3. Negotiation: an Accept header whose clauses an insertion sort moves one by one to the front. */
const acceptHeader: Attack = {
  name: 'accept',
  what: `LISTs of Services with an Accept header of ${String(ACCEPT_CLAUSES * 15)} bytes: ${ACCEPT_CLAUSES.toLocaleString('en-US')} clauses in rising q, one at a time`,
  prepare(env) {
    const clauses: string[] = [];
    for (let i = 1; i <= ACCEPT_CLAUSES; i++) clauses.push(`x/y;q=0.${String(i).padStart(6, '0')}`);
    const accept = clauses.join(',');
    return Promise.resolve({
      async run(signal) {
        const { sent, answers } = await flood(env, signal, 1, () => ({
          path: `/api/v1/namespaces/${env.tenants.attackNamespace}/services`,
          headers: { ...bearer(env.tenants.attackerToken), accept },
        }));
        return { sent, answers, effect: answersText(answers) };
      },
      close: () => Promise.resolve(),
    });
  },
};

/**
 * A resourceVersion the upstream cannot have: 10^19 (20 digits; 10^20 has 21, more than the
 * proxy's reader of write answers takes, so it would not be read at all).
 */
const POISON_RV = '1'.padEnd(20, '0');
const POISON_POD = 'hostile-backend';

/** 4. Read-your-writes: a write through a pod's proxy, answered by the pod with a huge resourceVersion. */
const rywPoison: Attack = {
  name: 'ryw-poison',
  what: `POSTs through pods/${POISON_POD}/proxy (a pod in a network namespace of the suite's own) answered with a Pod claiming resourceVersion ${POISON_RV}, one a second`,
  async prepare(env) {
    const backend: PodBackend | string = await startPodBackend(POISON_RV);
    if (typeof backend === 'string') return backend;
    const ns = env.tenants.attackNamespace;
    try {
      await kube(env.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
        metadata: { name: POISON_POD },
        spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: backend.port }] }] },
      });
      // No kubelet: the admin sets the status one would, with the backend's address as the pod's.
      const pod = await kube<{ status?: Record<string, unknown> }>(env.admin, 'GET', `/api/v1/namespaces/${ns}/pods/${POISON_POD}`);
      await kube(env.admin, 'PUT', `/api/v1/namespaces/${ns}/pods/${POISON_POD}/status`, {
        ...pod,
        status: { ...pod.status, phase: 'Running', podIP: backend.podIp, podIPs: [{ ip: backend.podIp }] },
      });
      // The apiserver proxies to it (as the admin, straight): else the attack could not be had.
      const res = await env.admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/pods/${POISON_POD}:${String(backend.port)}/proxy/check`,
        body: '{}',
      });
      const body = res.body.toString();
      if (res.statusCode !== 200 || !body.includes(POISON_RV))
        throw new Error(`the apiserver did not proxy to the backend: ${String(res.statusCode)} ${body.slice(0, 200)}`);
    } catch (error) {
      backend.close();
      return `the pod's proxy could not reach the backend: ${error instanceof Error ? error.message : String(error)}`;
    }
    return {
      async run(signal) {
        const dispatcher = new Agent({ ...HTTP1, connect: { ca: env.ca } });
        const answers = newAnswers();
        try {
          while (!signal.aborted) {
            try {
              const res = await request(`${env.url}/api/v1/namespaces/${ns}/pods/${POISON_POD}:${String(backend.port)}/proxy/write`, {
                dispatcher,
                method: 'POST',
                headers: { ...bearer(env.tenants.attackerToken), 'content-type': 'application/json' },
                body: '{}',
                signal: AbortSignal.any([signal, AbortSignal.timeout(ATTACK_REQUEST_TIMEOUT_MS)]),
              });
              await res.body.dump();
              answers.add(res.statusCode);
            } catch (error) {
              if (aborted(signal)) {
                answers.add(UNANSWERED);
                break;
              }
              answers.add(errorName(error));
            }
            await sleep(1000, undefined, { signal }).catch(() => undefined);
          }
        } finally {
          await dispatcher.destroy();
        }
        return { sent: answers.total(), answers: answers.get(), effect: answersText(answers.get()) };
      },
      close() {
        backend.close();
        return Promise.resolve();
      },
    };
  },
};

/** Watches of the huge-selector attack, open at once, each with a selector of its own. */
const SELECTOR_WATCHES = 8;

/** A valid labelSelector of `bytes` at most: `!kWxN` requirements (label absent, so every object matches and every requirement is evaluated). */
function hugeSelector(watch: number, bytes: number): { selector: string; requirements: number } {
  const parts: string[] = [];
  let length = 0;
  for (let n = 0; ; n++) {
    const part = `!k${String(watch)}x${n.toString(36)}`;
    if (length + part.length + 1 > bytes) break;
    parts.push(part);
    length += part.length + 1;
  }
  return { selector: parts.join(','), requirements: parts.length };
}

/** Reads a response body to its end (discarding it); resolves when it ends or breaks. */
async function drain(body: Dispatcher.ResponseData['body']): Promise<number> {
  let bytes = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) bytes += chunk.length;
  } catch {
    // ended by the phase, or by the server
  }
  return bytes;
}

/**
 * Opens `paths` as watches all at once (each its own connection) and reads them until `signal`
 * aborts (the attack's release); resolves with their answers, the most open at once, and the bytes received.
 */
async function holdWatches(
  env: AttackEnv,
  signal: AbortSignal,
  paths: readonly string[],
  token: string,
): Promise<{ answers: Record<string, number>; mostOpen: number; bytes: number }> {
  const dispatcher = new Agent({ ...HTTP1, connect: { ca: env.ca }, headersTimeout: ATTACK_REQUEST_TIMEOUT_MS, bodyTimeout: 0 });
  const answers = newAnswers();
  let open = 0;
  let mostOpen = 0;
  let bytes = 0;
  const watch = async (path: string): Promise<void> => {
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${env.url}${path}`, { dispatcher, headers: bearer(token), signal });
    } catch (error) {
      answers.add(aborted(signal) ? UNANSWERED : errorName(error));
      return;
    }
    answers.add(res.statusCode);
    if (res.statusCode === 200) mostOpen = Math.max(mostOpen, ++open);
    bytes += await drain(res.body);
    if (res.statusCode === 200) open--;
  };
  try {
    await Promise.all(paths.map(watch));
  } finally {
    await dispatcher.destroy();
  }
  return { answers: answers.get(), mostOpen, bytes };
}

/** 5. Selectors: watches that hold a ~1 MiB selector each for as long as they are open. */
const hugeSelectorWatches: Attack = {
  name: 'huge-selector',
  what: `${String(SELECTOR_WATCHES)} watches of Services at once, each with a valid ~1 MiB labelSelector of its own (~120,000 requirements), kept open`,
  prepare(env) {
    const selectors = Array.from({ length: SELECTOR_WATCHES }, (_, w) => hugeSelector(w, GO_MAX_HEADER_BYTES - HEAD_ROOM_BYTES - 200));
    const path = `/api/v1/namespaces/${env.tenants.attackNamespace}/services?watch=true&timeoutSeconds=3600&labelSelector=`;
    return Promise.resolve({
      async run(_stop, release) {
        const held = await holdWatches(
          env,
          release,
          selectors.map(({ selector }) => `${path}${selector}`),
          env.tenants.attackerToken,
        );
        return {
          sent: selectors.length,
          answers: held.answers,
          effect: `${answersText(held.answers)}; ${(selectors[0]?.requirements ?? 0).toLocaleString('en-US')} requirements each; at most ${String(held.mostOpen)} open at once; ${(held.bytes / 2 ** 20).toFixed(1)} MiB of events received`,
        };
      },
      close: () => Promise.resolve(),
    });
  },
};

/** Nesting of the continue token's JSON: Go's decoder allows 10,000 (encoding/json maxNestingDepth). */
const CONTINUE_DEPTH = 5_000;

/** 6. Parsers: a well-formed continue token with an array nested 5,000 deep. */
const deepContinue: Attack = {
  name: 'deep-continue',
  what: `LISTs of Services with a continue token holding an array nested ${CONTINUE_DEPTH.toLocaleString('en-US')} deep, one at a time`,
  prepare(env) {
    const json = `{"v":"meta.k8s.io/v1","rv":1,"start":"a","x":${'['.repeat(CONTINUE_DEPTH)}${']'.repeat(CONTINUE_DEPTH)}}`;
    const token = Buffer.from(json).toString('base64url');
    return Promise.resolve({
      async run(signal) {
        const { sent, answers } = await flood(env, signal, 1, () => ({
          path: `/api/v1/namespaces/${env.tenants.attackNamespace}/services?limit=10&continue=${token}`,
          headers: bearer(env.tenants.attackerToken),
        }));
        return { sent, answers, effect: answersText(answers) };
      },
      close: () => Promise.resolve(),
    });
  },
};

/**
 * 7. A flood of the cheapest read there is: a GET of one cached Service, the next sent as soon as
 * the last is answered (hundreds a second from one connection, within every limit on what is in
 * flight). Each answer is made of buffers that live a moment, beside those the cache keeps.
 */
const readFlood: Attack = {
  name: 'read-flood',
  what: 'GETs of one Service, one at a time, each sent as soon as the last is answered',
  prepare(env) {
    return Promise.resolve({
      async run(signal) {
        const { sent, answers } = await flood(env, signal, 1, () => ({
          path: `/api/v1/namespaces/${env.tenants.attackNamespace}/services/${serviceName(0)}`,
          headers: bearer(env.tenants.attackerToken),
        }));
        return { sent, answers, effect: answersText(answers) };
      },
      close: () => Promise.resolve(),
    });
  },
};

const REQUESTS = 'kube_cache_proxy_requests_total';

/** 8. Metrics: a distinct junk resource per request, from a client with no credentials. */
const junkPaths: Attack = {
  name: 'junk-paths',
  what: 'GETs of /api/v1/junk-N (a distinct made-up resource each) with no credentials, 4 at a time',
  prepare(env) {
    const salt = randomBytes(3).toString('hex');
    return Promise.resolve({
      async run(signal) {
        const { sent, answers } = await flood(env, signal, 4, (i) => ({
          path: `/api/v1/junk-${salt}-${String(i)}`,
          headers: { accept: 'application/json' },
        }));
        return { sent, answers, effect: answersText(answers) };
      },
      /**
       * The harm: the `resource` label of the proxy's request counter has room for a bounded
       * number of names; a type read for the first time after the attack must still be counted
       * under its own name (the operator's view of what the cache serves).
       */
      async check(proxy) {
        const dispatcher = new Agent({ ...HTTP1, connect: { ca: env.ca } });
        try {
          const res = await request(`${env.url}/api/v1/namespaces/${env.tenants.attackNamespace}/services`, {
            dispatcher,
            headers: bearer(env.tenants.attackerToken),
          });
          await res.body.dump();
        } finally {
          await dispatcher.close();
        }
        const text = await proxy.metrics();
        if (text === undefined) return ['the proxy’s /metrics did not answer'];
        const counted = metricSum(text, REQUESTS, { resource: 'services' });
        const labels = new Set([...text.matchAll(/^kube_cache_proxy_requests_total\{[^}]*resource="([^"]*)"/gm)].map((m) => m[1]));
        return counted > 0
          ? []
          : [
              `a LIST of Services after the attack is not counted under resource="services" (${String(labels.size)} resource labels in use)`,
            ];
      },
      close: () => Promise.resolve(),
    });
  },
};

/** What one identity opens at once in the fairness attack: far past what any well-behaved client holds. */
const FAIRNESS_WATCHES = 1_000;
const FAIRNESS_LISTS_IN_FLIGHT = 200;

/**
 * 9. Fairness: one identity holds a thousand watches and hundreds of LISTs in flight, without
 * pause (over HTTP/1.1, the proxy's only protocol: a connection each).
 */
const fairness: Attack = {
  name: 'fairness',
  what: `one identity: ${FAIRNESS_WATCHES.toLocaleString('en-US')} watches of Services held open and ${String(FAIRNESS_LISTS_IN_FLIGHT)} LISTs of them always in flight`,
  prepare(env) {
    return Promise.resolve({
      async run(stop, release) {
        const token = env.tenants.attackerToken;
        const path = `/api/v1/namespaces/${env.tenants.attackNamespace}/services`;
        // The watches start at the list's RV (a reflector's, after its LIST): no replay, the count is the point.
        const list = await kube<{ metadata: { resourceVersion: string } }>(env.admin, 'GET', `${path}?limit=1`);
        const watchPath = `${path}?watch=true&resourceVersion=${list.metadata.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=3600`;
        const [held, listed] = await Promise.all([
          holdWatches(
            env,
            release,
            Array.from({ length: FAIRNESS_WATCHES }, () => watchPath),
            token,
          ),
          flood(env, stop, FAIRNESS_LISTS_IN_FLIGHT, () => ({ path, headers: bearer(token) })),
        ]);
        return {
          sent: FAIRNESS_WATCHES + listed.sent,
          answers: listed.answers,
          effect: `watches: ${answersText(held.answers)}, at most ${held.mostOpen.toLocaleString('en-US')} open at once; LISTs: ${answersText(listed.answers)}`,
        };
      },
      close: () => Promise.resolve(),
    });
  },
};

export const ATTACKS: Readonly<Record<AttackName, Attack>> = {
  'sar-names': sarNames,
  'token-flood': tokenFlood,
  accept: acceptHeader,
  'ryw-poison': rywPoison,
  'huge-selector': hugeSelectorWatches,
  'deep-continue': deepContinue,
  'read-flood': readFlood,
  'junk-paths': junkPaths,
  fairness,
};
