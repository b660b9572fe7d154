/**
 * The library's connection to the apiserver, made from the caller's @kubernetes/client-node
 * KubeConfig: the proxy's own upstream client (an undici Pool, the kubeconfig's TLS settings and
 * credentials, tokens and exec plugins re-read as they rotate), opened on first use.
 *
 * Why lazy: making the connection is asynchronous (client-node's applyToHTTPSOptions may run an
 * exec plugin), while client-go's constructors (NewSharedInformerFactory, a resource lock) are
 * not, and neither are ours. A failure to connect is the failure of the request that needed it,
 * which the caller already handles (the reflector backs off and retries; the elector retries
 * every retryPeriod); the next request tries to connect again.
 *
 * Idle connections do not keep the process alive (undici unrefs idle sockets); close() ends them.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../upstream/client.ts';
import { newUpstreamClient } from '../upstream/client.ts';
import { upstreamConfigFromKubeConfig } from '../upstream/config.ts';

/** What the informers and the Lease lock send their requests through, and how it ends. */
export interface KubeClient extends Pick<UpstreamClient, 'request' | 'stream'> {
  /** Closes the connections; requests after it fail. */
  close(): Promise<void>;
}

/** A client for the current context of `kubeConfig` (read when the first request is sent). */
export function newKubeClient(kubeConfig: KubeConfig): KubeClient {
  return new LazyKubeClient(kubeConfig);
}

class LazyKubeClient implements KubeClient {
  readonly #kubeConfig: KubeConfig;
  /** The connection, once asked for; undefined again after a failure to make it, so that the next request retries. */
  #client: Promise<UpstreamClient> | undefined;
  #closed = false;

  constructor(kubeConfig: KubeConfig) {
    this.#kubeConfig = kubeConfig;
  }

  async request(request: UpstreamRequest): Promise<UpstreamResponse> {
    return (await this.#connect()).request(request);
  }

  async stream(request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    return (await this.#connect()).stream(request);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    try {
      await (await client).close();
    } catch {
      // it never connected: nothing to close
    }
  }

  #connect(): Promise<UpstreamClient> {
    if (this.#closed) return Promise.reject(new Error('the Kubernetes client is closed'));
    if (this.#client === undefined) {
      const made = upstreamConfigFromKubeConfig(this.#kubeConfig, 'the KubeConfig given').then((config) => newUpstreamClient(config));
      this.#client = made;
      made.catch(() => {
        if (this.#client === made) this.#client = undefined;
      });
    }
    return this.#client;
  }
}
