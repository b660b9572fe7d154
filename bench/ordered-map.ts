/**
 * The watch cache's key-ordered store: `node bench/ordered-map.ts`.
 *
 * Measures the persistent B+-tree (src/cache/ordered-map.ts) on N keys ("ns-<i % 100>/pod-<i>",
 * built before timing): bulk load (replace) from shuffled and from sorted entries, set of existing
 * keys in random order, delete + insert of a random key, set with a snapshot taken before each
 * one (what a LIST between two changes costs the next change), rank queries, and full iteration.
 * For comparison, the same on the approach watch-cache.ts has today: a sorted array, `splice` on
 * insert and delete, and a full `slice()` copy on the first write after a snapshot was handed out.
 * Each timing is the median of ROUNDS rounds. About 10 s on 2 cores; results to stdout.
 */
import { newOrderedMap } from '../src/cache/ordered-map.ts';
import type { OrderedMap } from '../src/cache/ordered-map.ts';
import { seededRandom } from '../test/helpers/prng.ts';

/** Keys in the store: a large namespace-wide cache. */
const N = 100_000;
/** Operations per timing of the tree, and of the sorted array where each costs O(1). */
const OPS = 100_000;
/** Operations per timing of the sorted array where each costs an O(N) splice. */
const ARRAY_SPLICE_OPS = 2_000;
/** Operations per timing of the sorted array where each costs an O(N) copy (slice after a snapshot). */
const ARRAY_COPY_OPS = 200;
/** Rounds per timing; the median is reported. */
const ROUNDS = 5;

interface Item {
  readonly key: string;
  readonly rv: number;
}

const random = seededRandom(20240601);
const keys = Array.from({ length: N }, (_, i) => `ns-${i % 100}/pod-${i}`);
const sortedKeys = keys.slice().sort();
const shuffledKeys = keys.slice();
for (let i = shuffledKeys.length - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  const a = shuffledKeys[i];
  const b = shuffledKeys[j];
  if (a === undefined || b === undefined) throw new Error('shuffle out of range');
  shuffledKeys[i] = b;
  shuffledKeys[j] = a;
}
const shuffledEntries = shuffledKeys.map((key, rv): [string, Item] => [key, { key, rv }]);
const sortedEntries = sortedKeys.map((key, rv): [string, Item] => [key, { key, rv }]);
/** The keys each write round touches, in random order (existing keys). */
const opKeys = Array.from({ length: OPS }, () => keys[Math.floor(random() * N)] ?? '');
/** Keys absent from the store, for the rank queries. */
const probeKeys = opKeys.map((key) => `${key}x`);

function median(values: readonly number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? Number.NaN;
}

/** Median ms of ROUNDS runs of `run`, each after a fresh `setup` (not timed). */
function time<S>(setup: () => S, run: (state: S) => void): number {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const state = setup();
    const start = performance.now();
    run(state);
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** Results printed by the table at the end, one row per measurement. */
const rows: { readonly what: string; readonly tree: string; readonly array: string }[] = [];
const ms = (value: number): string => `${value.toFixed(1)} ms`;
const us = (totalMs: number, ops: number): string => `${((totalMs * 1000) / ops).toFixed(2)} µs/op`;
const progress = (line: string): void => {
  process.stderr.write(`  ${line}\n`);
};

function loadedTree(): OrderedMap<Item> {
  const map = newOrderedMap<Item>();
  map.replace(sortedEntries);
  return map;
}

/** The current approach: objects sorted by key, copy-on-write after a snapshot. */
class SortedArray {
  #items: Item[] = [];
  #shared = false;

  replace(entries: readonly (readonly [string, Item])[]): void {
    const byKey = new Map<string, Item>();
    for (const [key, item] of entries) byKey.set(key, item);
    this.#items = [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    this.#shared = false;
  }

  snapshot(): readonly Item[] {
    this.#shared = true;
    return this.#items;
  }

  set(item: Item): void {
    const items = this.#writable();
    const at = this.#lowerBound(item.key);
    if (items[at]?.key === item.key) items[at] = item;
    else items.splice(at, 0, item);
  }

  delete(key: string): void {
    const items = this.#writable();
    const at = this.#lowerBound(key);
    if (items[at]?.key === key) items.splice(at, 1);
  }

  #writable(): Item[] {
    if (this.#shared) {
      this.#items = this.#items.slice();
      this.#shared = false;
    }
    return this.#items;
  }

  #lowerBound(key: string): number {
    let lo = 0;
    let hi = this.#items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#items[mid]?.key ?? '') < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function loadedArray(): SortedArray {
  const array = new SortedArray();
  array.replace(sortedEntries);
  return array;
}

progress(
  `N = ${N}; ops per timing: ${OPS} (tree), ${ARRAY_SPLICE_OPS} (array splice), ${ARRAY_COPY_OPS} (array copy); median of ${ROUNDS}`,
);

rows.push({
  what: 'bulk load, shuffled entries',
  tree: ms(
    time(newOrderedMap<Item>, (map) => {
      map.replace(shuffledEntries);
    }),
  ),
  array: ms(
    time(
      () => new SortedArray(),
      (array) => {
        array.replace(shuffledEntries);
      },
    ),
  ),
});
rows.push({
  what: 'bulk load, sorted entries',
  tree: ms(
    time(newOrderedMap<Item>, (map) => {
      map.replace(sortedEntries);
    }),
  ),
  array: ms(
    time(
      () => new SortedArray(),
      (array) => {
        array.replace(sortedEntries);
      },
    ),
  ),
});
progress('bulk load done');

rows.push({
  what: 'set existing key (random)',
  tree: us(
    time(loadedTree, (map) => {
      for (let i = 0; i < OPS; i++) {
        const key = opKeys[i] ?? '';
        map.set(key, { key, rv: i });
      }
    }),
    OPS,
  ),
  array: us(
    time(loadedArray, (array) => {
      for (let i = 0; i < OPS; i++) array.set({ key: opKeys[i] ?? '', rv: i });
    }),
    OPS,
  ),
});

rows.push({
  what: 'delete + insert (random)',
  tree: us(
    time(loadedTree, (map) => {
      for (let i = 0; i < OPS; i++) {
        const key = opKeys[i] ?? '';
        map.delete(key);
        map.set(key, { key, rv: i });
      }
    }),
    OPS,
  ),
  array: us(
    time(loadedArray, (array) => {
      for (let i = 0; i < ARRAY_SPLICE_OPS; i++) {
        const key = opKeys[i] ?? '';
        array.delete(key);
        array.set({ key, rv: i });
      }
    }),
    ARRAY_SPLICE_OPS,
  ),
});
progress('writes done');

rows.push({
  what: 'snapshot() alone',
  tree: us(
    time(loadedTree, (map) => {
      let size = 0;
      for (let i = 0; i < OPS; i++) size += map.snapshot().size;
      if (size !== OPS * N) throw new Error('snapshot size');
    }),
    OPS,
  ),
  array: us(
    time(loadedArray, (array) => {
      let size = 0;
      for (let i = 0; i < OPS; i++) size += array.snapshot().length;
      if (size !== OPS * N) throw new Error('snapshot size');
    }),
    OPS,
  ),
});

rows.push({
  what: 'snapshot, then set existing key',
  tree: us(
    time(loadedTree, (map) => {
      for (let i = 0; i < OPS; i++) {
        map.snapshot();
        const key = opKeys[i] ?? '';
        map.set(key, { key, rv: i });
      }
    }),
    OPS,
  ),
  array: us(
    time(loadedArray, (array) => {
      for (let i = 0; i < ARRAY_COPY_OPS; i++) {
        array.snapshot();
        array.set({ key: opKeys[i] ?? '', rv: i });
      }
    }),
    ARRAY_COPY_OPS,
  ),
});
progress('snapshots done');

rows.push({
  what: 'lowerBound + at (random)',
  tree: us(
    time(loadedTree, (map) => {
      let found = 0;
      for (let i = 0; i < OPS; i++) if (map.at(map.lowerBound(probeKeys[i] ?? '')) !== undefined) found++;
      if (found === 0) throw new Error('no probe found');
    }),
    OPS,
  ),
  array: '(binary search)',
});

rows.push({
  what: `iterate all ${N} values`,
  tree: ms(
    time(loadedTree, (map) => {
      let rv = 0;
      for (const item of map.values()) rv += item.rv;
      if (rv === 0) throw new Error('empty iteration');
    }),
  ),
  array: ms(
    time(loadedArray, (array) => {
      let rv = 0;
      for (const item of array.snapshot()) rv += item.rv;
      if (rv === 0) throw new Error('empty iteration');
    }),
  ),
});
progress('reads done');

const width = Math.max(...rows.map((row) => row.what.length));
process.stdout.write(`${'operation'.padEnd(width)}  ${'B+-tree'.padStart(14)}  ${'sorted array'.padStart(16)}\n`);
for (const row of rows) process.stdout.write(`${row.what.padEnd(width)}  ${row.tree.padStart(14)}  ${row.array.padStart(16)}\n`);
