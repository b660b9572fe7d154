/**
 * Limits on what large request heads cost a shared proxy (shared mode). A request's head (its
 * target and header fields) may be as large as the header section the apiserver takes (1 MiB,
 * client-errors.ts), and each byte of it is read, parsed, checked and forwarded: ~20 ms of the
 * event loop for a 1 MiB target, and its garbage. A flood of such requests from one client would
 * take the loop, and so reads, away from every other client, though each request alone is legal.
 *
 * So a head larger than LARGE_HEAD_BYTES is charged, before anything reads it, against a token
 * bucket of bytes per source address (golang.org/x/time/rate's Limiter.AllowN: `burstBytes`,
 * refilled at `bytesPerSecond`), and held against the bytes of large heads the address may have in
 * flight at once (`maxInflightBytes`: a watch or a followed log holds its head, parsed and
 * forwarded, for its whole life); past either, the apiserver's 429 with Retry-After, and nothing
 * of the request past the HTTP parser's reading of it. That reading is the cost left, so a
 * refused head is charged too (see take), and its connection is held unread for the Retry-After
 * (too-many-requests.ts): an address's large heads are parsed at the refill rate at most, however
 * many connections it uses, beside one per new connection. Heads below LARGE_HEAD_BYTES cost
 * nothing and meet no limit: clients' heads are a few KiB (a token, a selector, a continue
 * token), so only a client that sends heads of tens of KiB and more meets these limits at all,
 * and then 64 KiB of them a second (a 64 KiB head each second, a ~1 MiB one each 16 s), two in
 * flight, is more than any client of the apiserver sends.
 *
 * Each refused head owes its bytes on top of those owed before it, so an address's refused heads
 * wait in turn: with four connections refused at once, the first is read again after one head's
 * refill, the next after two, and so on. A common wait would hand all four back to the loop in the
 * same instant, where ~1 MiB heads cost tens of milliseconds each to read, one after the other.
 * What an address may owe is bounded (MAX_OWED_SECONDS of refill), so a wait never grows past
 * that and one head's refill: past it (more held connections than that many seconds pay for), the
 * waits are alike again, and each such connection is read once per wait.
 *
 * By source address, not by user: the charge comes before the client is identified (a review may
 * be needed for that, and costs more than the head), and only large heads are charged, so the
 * pods sharing an address (hostNetwork agents, a NAT) share only the budget none of them uses.
 * Sidecar mode has one tenant, the pod: it meets no such limit.
 *
 * Cost: nothing for a small head (its size is summed from the parsed header lines); an LRU lookup
 * for a large one. At most `maxAddresses` buckets are held (the least recently used dropped past
 * it, its address starting again with a full bucket).
 */
import { LRUCache } from 'lru-cache';
import { realClock } from '../../clock/clock.ts';
import { MAX_HEADER_BYTES } from '../../request/client-errors.ts';
import type { Clock } from '../../clock/clock.ts';
import { NO_SEAT } from './flow-limits.ts';
import type { Seat } from './flow-limits.ts';

/** A head below this is never charged: ten times a large ordinary one (a long selector and a bearer token). */
export const LARGE_HEAD_BYTES = 16 * 1024;
/**
 * Default refill: 64 KiB a second, one ~1 MiB head each 16 s. Reading a ~1 MiB head takes the
 * loop 20-40 ms with its garbage, during which every other client's reads wait: at this rate an
 * address's largest heads take ~0.2% of the loop, and delay a handful of reads a minute.
 */
export const DEFAULT_LARGE_HEAD_BYTES_PER_SECOND = 64 * 1024;
/** Default bucket: the largest head the server takes, once. */
export const DEFAULT_LARGE_HEAD_BURST_BYTES = MAX_HEADER_BYTES;
/** What an address may owe for refused heads, in seconds of refill: the longest Retry-After. */
export const MAX_OWED_SECONDS = 120;
/**
 * Default bytes of large heads in flight per address: two of the largest the server takes. What
 * the proxy holds for such a request is a few copies of its head (the parsed target and query,
 * the upstream request): eight open ~1 MiB-selector watches held 33 MiB of RSS.
 */
export const DEFAULT_LARGE_HEADS_INFLIGHT_BYTES = 2 * 1024 * 1024 + 8192;
/** Source addresses whose buckets are held: ~250 bytes each, ~2.5 MiB at most. */
export const MAX_HEAD_ADDRESSES = 10_000;

export interface RequestHeadLimitSettings {
  /** Bytes of large heads a second, per source address; 0: no limit. */
  readonly bytesPerSecond: number;
  /** The bucket's size in bytes (at least the largest head the server takes). */
  readonly burstBytes: number;
  /** Bytes of large heads in flight at once, per source address (at least the largest head); 0: no limit. */
  readonly maxInflightBytes: number;
}

export interface RequestHeadLimitsOptions extends RequestHeadLimitSettings {
  readonly maxAddresses?: number;
  readonly clock?: Clock;
}

export interface RequestHeadLimits {
  readonly settings: RequestHeadLimitSettings;
  /**
   * Charges a head of `bytes` from `address`: a seat to release when its response ends (NO_SEAT
   * for a small head), or the whole seconds until it could pass (Retry-After, at least 1).
   * Synchronous: no await between check and take.
   */
  take(address: string, bytes: number): Seat | number;
  /** Heads refused since start. */
  rejected(): number;
}

/** The size of a request's head as parsed: its target, and each header line's name and value with their separators. */
export function requestHeadBytes(url: string, rawHeaders: readonly string[]): number {
  let bytes = url.length;
  // "Name: value\r\n": 4 bytes beside the name and the value.
  for (const field of rawHeaders) bytes += field.length + 2;
  return bytes;
}

/** A token bucket of bytes at `at` (ms), and the bytes of large heads in flight. */
interface Bucket {
  bytes: number;
  at: number;
  inflight: number;
}

/** Retry-After while an address's large heads in flight are at their bound: a long-running request may hold its seat for long. */
const INFLIGHT_RETRY_AFTER_SECONDS = 1;

export function newRequestHeadLimits(options: RequestHeadLimitsOptions): RequestHeadLimits {
  const clock = options.clock ?? realClock;
  const settings: RequestHeadLimitSettings = {
    bytesPerSecond: options.bytesPerSecond,
    burstBytes: options.burstBytes,
    maxInflightBytes: options.maxInflightBytes,
  };
  const { bytesPerSecond, burstBytes, maxInflightBytes } = settings;
  // An address dropped past maxAddresses (the least recently used) starts again with a full
  // bucket and nothing in flight; its seats still release into the dropped one.
  const buckets = new LRUCache<string, Bucket>({ max: options.maxAddresses ?? MAX_HEAD_ADDRESSES });
  let rejected = 0;
  return {
    settings,
    take(address, bytes) {
      if (bytes < LARGE_HEAD_BYTES || (bytesPerSecond <= 0 && maxInflightBytes <= 0)) return NO_SEAT;
      const now = clock.now();
      let bucket = buckets.get(address);
      if (bucket === undefined) {
        bucket = { bytes: burstBytes, at: now, inflight: 0 };
        buckets.set(address, bucket);
      }
      if (bytesPerSecond > 0) {
        bucket.bytes = Math.min(burstBytes, bucket.bytes + ((now - bucket.at) * bytesPerSecond) / 1000);
        bucket.at = now;
      }
      const overInflight = maxInflightBytes > 0 && bucket.inflight + bytes > maxInflightBytes;
      if (overInflight || (bytesPerSecond > 0 && bucket.bytes < bytes)) {
        rejected++;
        if (bytesPerSecond <= 0) return INFLIGHT_RETRY_AFTER_SECONDS;
        // A refused head was read and parsed all the same: it is charged too, after what the
        // address owes already, and its Retry-After (for which its connection is held unread,
        // too-many-requests.ts) is the time until the bucket could take it again. So the bytes of
        // large heads an address gets parsed stay within the refill rate however many
        // connections it sends them on, and its held connections come back one by one.
        bucket.bytes = Math.max(-MAX_OWED_SECONDS * bytesPerSecond, bucket.bytes - bytes);
        const wait = Math.ceil((bytes - bucket.bytes) / bytesPerSecond);
        return Math.max(overInflight ? INFLIGHT_RETRY_AFTER_SECONDS : 1, wait);
      }
      if (bytesPerSecond > 0) bucket.bytes -= bytes;
      const held = bucket;
      held.inflight += bytes;
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          held.inflight -= bytes;
        },
      };
    },
    rejected: () => rejected,
  };
}
