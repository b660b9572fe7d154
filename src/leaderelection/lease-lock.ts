/**
 * LeaseLock (client-go tools/leaderelection/resourcelock/leaselock.go): the election record kept
 * in the spec of a coordination.k8s.io/v1 Lease, read and written through the proxy's upstream
 * client.
 *
 * Optimistic concurrency: the lock keeps the Lease as last returned by the apiserver (GET, POST or
 * PUT) and `update` PUTs that object with a new spec, so the request carries the resourceVersion
 * this candidate read. If anyone wrote the Lease in between, the apiserver answers 409 Conflict and
 * the write is lost; of candidates that read one version, at most one can win.
 */
import { ApiStatusError } from '../upstream/api-error.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { LeaderElectionRecord, ObservedRecord, ResourceLock } from './resource-lock.ts';
import { recordBytes } from './resource-lock.ts';

/** client-go's default renewDeadline (10 s) / 2; see `requestTimeoutMs`. */
const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

export interface LeaseLockOptions {
  /** What the lock sends its GET, POST and PUT through: any UpstreamClient will do. */
  readonly client: Pick<UpstreamClient, 'request'>;
  readonly namespace: string;
  readonly name: string;
  /** This candidate's identity, written as holderIdentity; unique among candidates. */
  readonly identity: string;
  /**
   * Each request is abandoned after this long. client-go (resourcelock/interface.go
   * NewFromKubeconfig) sets its client's timeout to max(1 s, renewDeadline / 2) "to keep a single
   * hung request from forcing a leader loss"; pass that. Default 5 s.
   */
  readonly requestTimeoutMs?: number;
}

/** Lease.spec as the apiserver serves it (coordination.k8s.io/v1 LeaseSpec); fields we do not write are kept out. */
export interface LeaseSpec {
  readonly holderIdentity?: string | null;
  readonly leaseDurationSeconds?: number | null;
  readonly acquireTime?: string | null;
  readonly renewTime?: string | null;
  readonly leaseTransitions?: number | null;
}

interface Lease {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string };
  readonly spec?: LeaseSpec;
}

export function newLeaseLock(options: LeaseLockOptions): ResourceLock {
  return new LeaseLock(options);
}

/** leaselock.go LeaseSpecToLeaderElectionRecord: absent fields read as zero values. */
export function leaseSpecToLeaderElectionRecord(spec: LeaseSpec | undefined): LeaderElectionRecord {
  return {
    holderIdentity: spec?.holderIdentity ?? '',
    leaseDurationSeconds: spec?.leaseDurationSeconds ?? 0,
    acquireTime: spec?.acquireTime ?? null,
    renewTime: spec?.renewTime ?? null,
    leaderTransitions: spec?.leaseTransitions ?? 0,
  };
}

/** leaselock.go LeaderElectionRecordToLeaseSpec. */
export function leaderElectionRecordToLeaseSpec(record: LeaderElectionRecord): LeaseSpec {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTime,
    renewTime: record.renewTime,
    leaseTransitions: record.leaderTransitions,
  };
}

class LeaseLock implements ResourceLock {
  readonly #client: Pick<UpstreamClient, 'request'>;
  readonly #namespace: string;
  readonly #name: string;
  readonly #identity: string;
  readonly #timeoutMs: number;
  /** The Lease as the apiserver last returned it to this lock: `update` writes over this version. */
  #lease: Lease | undefined;

  constructor(options: LeaseLockOptions) {
    this.#client = options.client;
    this.#namespace = options.namespace;
    this.#name = options.name;
    this.#identity = options.identity;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  async get(signal?: AbortSignal, fromCache = false): Promise<ObservedRecord> {
    const lease = await this.#send('GET', `${this.#objectPath()}${fromCache ? '?resourceVersion=0' : ''}`, undefined, signal);
    this.#lease = lease;
    const record = leaseSpecToLeaderElectionRecord(lease.spec);
    return { record, raw: recordBytes(record) };
  }

  async create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
    const lease: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.#name, namespace: this.#namespace },
      spec: leaderElectionRecordToLeaseSpec(record),
    };
    this.#lease = await this.#send('POST', this.#collectionPath(), lease, signal);
  }

  async update(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
    if (this.#lease === undefined) throw new Error('lease not initialized, call get or create first');
    // The whole object as read, resourceVersion included: the apiserver refuses it (409) if the
    // Lease changed since. Labels, annotations and owner references written by others are kept.
    const lease: Lease = { ...this.#lease, spec: leaderElectionRecordToLeaseSpec(record) };
    this.#lease = await this.#send('PUT', this.#objectPath(), lease, signal);
  }

  identity(): string {
    return this.#identity;
  }

  describe(): string {
    return `${this.#namespace}/${this.#name}`;
  }

  #collectionPath(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#namespace)}/leases`;
  }

  #objectPath(): string {
    return `${this.#collectionPath()}/${encodeURIComponent(this.#name)}`;
  }

  async #send(method: 'GET' | 'POST' | 'PUT', path: string, body: Lease | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const res = await this.#client.request({
      method,
      path,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
    }
    return parseLease(res.body.toString());
  }
}

function parseLease(text: string): Lease {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null) throw new Error('the apiserver returned a Lease that is not an object');
  const lease = parsed as { metadata?: unknown; spec?: unknown };
  if (typeof lease.metadata !== 'object' || lease.metadata === null) throw new Error('the apiserver returned a Lease without metadata');
  if (lease.spec !== undefined && (typeof lease.spec !== 'object' || lease.spec === null)) {
    throw new Error('the apiserver returned a Lease whose spec is not an object');
  }
  const spec = lease.spec as Record<string, unknown> | undefined;
  if (spec !== undefined) {
    for (const key of ['holderIdentity', 'acquireTime', 'renewTime'] as const) {
      if (spec[key] !== undefined && spec[key] !== null && typeof spec[key] !== 'string')
        throw new Error(`Lease spec.${key} is not a string`);
    }
    for (const key of ['leaseDurationSeconds', 'leaseTransitions'] as const) {
      if (spec[key] !== undefined && spec[key] !== null && typeof spec[key] !== 'number')
        throw new Error(`Lease spec.${key} is not a number`);
    }
  }
  return parsed as Lease;
}
