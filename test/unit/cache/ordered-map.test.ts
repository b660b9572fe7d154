import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_NODE_ENTRIES, MIN_NODE_ENTRIES, checkInvariants, newOrderedMap } from '../../../src/cache/ordered-map.ts';
import type { OrderedMap, OrderedView } from '../../../src/cache/ordered-map.ts';
import { seededRandom } from '../../helpers/prng.ts';

function randomInt(random: () => number, below: number): number {
  return Math.floor(random() * below);
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = randomInt(random, i + 1);
    const a = out[i];
    const b = out[j];
    if (a === undefined || b === undefined) throw new Error('shuffle out of range');
    out[i] = b;
    out[j] = a;
  }
  return out;
}

/** Cache keys as the watch cache has them: `namespace/name`, and `name` for cluster-scoped objects. */
function keyOf(i: number): string {
  return i % 5 === 0 ? `node-${i}` : `ns-${i % 37}/pod-${i}`;
}

/** The reference: keys sorted with `<`, values beside them, every operation a binary search + splice. */
class Model {
  readonly keys: string[];
  readonly values: number[];

  constructor(keys: string[] = [], values: number[] = []) {
    this.keys = keys;
    this.values = values;
  }

  lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.keys[mid] ?? '') < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  set(key: string, value: number): number | undefined {
    const at = this.lowerBound(key);
    if (this.keys[at] === key) {
      const previous = this.values[at];
      this.values[at] = value;
      return previous;
    }
    this.keys.splice(at, 0, key);
    this.values.splice(at, 0, value);
    return undefined;
  }

  delete(key: string): number | undefined {
    const at = this.lowerBound(key);
    if (this.keys[at] !== key) return undefined;
    const previous = this.values[at];
    this.keys.splice(at, 1);
    this.values.splice(at, 1);
    return previous;
  }

  clone(): Model {
    return new Model(this.keys.slice(), this.values.slice());
  }
}

/** What values(from, to) promises: both truncated and clamped to [0, size], NaN as 0. */
function expectedRange(model: Model, from: number | undefined, to: number | undefined): number[] {
  const size = model.values.length;
  const clamp = (rank: number): number => (Number.isNaN(rank) ? 0 : Math.min(size, Math.max(0, Math.trunc(rank))));
  const lo = clamp(from ?? 0);
  const hi = clamp(to ?? size);
  return hi > lo ? model.values.slice(lo, hi) : [];
}

/** Everything `view` answers, against the model: O(n log n). */
function checkView(view: OrderedView<number>, model: Model): void {
  checkInvariants(view);
  const size = model.keys.length;
  assert.equal(view.size, size);
  assert.deepEqual([...view.values()], model.values);
  for (let i = 0; i < size; i++) {
    const key = model.keys[i] ?? '';
    assert.equal(view.get(key), model.values[i], `get(${key})`);
    assert.equal(view.at(i), model.values[i], `at(${i})`);
    assert.equal(view.lowerBound(key), i, `lowerBound(${key})`);
    // Just after `key`, before any longer key it prefixes.
    assert.equal(view.lowerBound(`${key}\0`), i + 1, `lowerBound(${key}\\0)`);
    assert.equal(view.get(`${key}\0`), undefined);
  }
  assert.equal(view.lowerBound(''), 0);
  assert.equal(view.lowerBound('\x7f'), size);
  assert.equal(view.at(-1), undefined);
  assert.equal(view.at(size), undefined);
}

test('OrderedMap: set, get and delete', () => {
  const map = newOrderedMap<number>();
  assert.equal(map.size, 0);
  assert.equal(map.get('a'), undefined);
  assert.equal(map.delete('a'), undefined);
  assert.equal(map.at(0), undefined);
  assert.equal(map.lowerBound('a'), 0);
  assert.deepEqual([...map.values()], []);

  assert.equal(map.set('default/b', 1), undefined);
  assert.equal(map.set('default/a', 2), undefined);
  assert.equal(map.set('default/b', 3), 1, 'set returns the previous value');
  assert.equal(map.size, 2);
  assert.equal(map.get('default/a'), 2);
  assert.equal(map.get('default/b'), 3);
  assert.equal(map.get('default/c'), undefined);
  assert.deepEqual([...map.values()], [2, 3]);

  assert.equal(map.delete('default/c'), undefined, 'a missing key');
  assert.equal(map.delete('default/a'), 2, 'delete returns the removed value');
  assert.equal(map.delete('default/a'), undefined);
  assert.equal(map.size, 1);
  assert.equal(map.get('default/a'), undefined);
  assert.equal(map.delete('default/b'), 3);
  assert.equal(map.size, 0);
  checkInvariants(map);
});

test('OrderedMap: keys are in byte order (JavaScript string order for ASCII)', () => {
  const keys = ['b', 'a/b', 'a-b', 'a.b', 'A', 'a', 'a0', 'kube-system/coredns', 'kube-system', 'default/x', 'Z/z'];
  const map = newOrderedMap<string>();
  for (const key of keys) map.set(key, key);
  const byBytes = keys.slice().sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  assert.deepEqual([...map.values()], byBytes);
  assert.deepEqual(byBytes, ['A', 'Z/z', 'a', 'a-b', 'a.b', 'a/b', 'a0', 'b', 'default/x', 'kube-system', 'kube-system/coredns']);
});

test('OrderedMap: rank queries match a sorted array', () => {
  const random = seededRandom(11);
  const map = newOrderedMap<number>();
  const model = new Model();
  for (const [value, i] of shuffled(
    Array.from({ length: 3000 }, (_, i) => i),
    random,
  ).entries()) {
    map.set(keyOf(i), value);
    model.set(keyOf(i), value);
  }
  checkView(map, model);
  // Keys that are not in the map, between and around the present ones.
  for (const probe of ['', 'a', 'node-', 'node-9999999', 'ns-', 'ns-1', 'ns-1/', 'ns-1/pod-', 'ns-36/pod-999', 'ns-4/pod-1', 'zzz']) {
    const rank = map.lowerBound(probe);
    assert.equal(rank, model.lowerBound(probe), `lowerBound(${probe})`);
    assert.equal(map.at(rank), model.values[rank]);
  }
  for (const rank of [-1, 3000, 3001, 0.5, Number.NaN, Infinity, -Infinity]) assert.equal(map.at(rank), undefined, `at(${rank})`);
});

test('OrderedMap: values(from, to) ranges, empty and out of range', () => {
  const empty = newOrderedMap<number>();
  assert.deepEqual([...empty.values(0, 10)], []);
  assert.deepEqual([...empty.values(-3, 3)], []);
  assert.deepEqual([...empty.values(5)], []);

  for (const size of [1, MAX_NODE_ENTRIES + 1, MAX_NODE_ENTRIES * MAX_NODE_ENTRIES + 7]) {
    const map = newOrderedMap<number>();
    const model = new Model();
    for (let i = 0; i < size; i++) {
      map.set(keyOf(i), i);
      model.set(keyOf(i), i);
    }
    const edges = [
      undefined,
      Number.NaN,
      -Infinity,
      -5,
      -1,
      0,
      0.5,
      1,
      MIN_NODE_ENTRIES,
      MAX_NODE_ENTRIES - 1,
      MAX_NODE_ENTRIES,
      MAX_NODE_ENTRIES + 1,
      size - 1,
      size - 0.5,
      size,
      size + 1,
      1e9,
      Infinity,
    ];
    for (const from of edges) {
      for (const to of edges) {
        assert.deepEqual([...map.values(from, to)], expectedRange(model, from, to), `size ${size}: values(${from}, ${to})`);
      }
    }
    // Every window of a few values, across leaf and branch boundaries.
    for (let from = 0; from < size; from += 3) {
      assert.deepEqual([...map.values(from, from + 40)], expectedRange(model, from, from + 40), `values(${from}, ${from + 40})`);
    }
  }

  const map = newOrderedMap<number>();
  map.set('a', 1);
  map.set('b', 2);
  const iterator = map.values();
  assert.equal(iterator[Symbol.iterator](), iterator);
  assert.deepEqual(iterator.next(), { done: false, value: 1 });
  assert.deepEqual(iterator.next(), { done: false, value: 2 });
  assert.deepEqual(iterator.next(), { done: true, value: undefined });
  assert.deepEqual(iterator.next(), { done: true, value: undefined }, 'stays done');
});

test('OrderedMap: snapshots never change, whatever is written after them', () => {
  const random = seededRandom(23);
  const map = newOrderedMap<number>();
  const model = new Model();
  const taken: { readonly snapshot: OrderedView<number>; readonly model: Model; readonly at: number }[] = [];
  taken.push({ snapshot: map.snapshot(), model: model.clone(), at: 0 });
  for (let op = 1; op <= 6000; op++) {
    const key = keyOf(randomInt(random, 1500));
    if (random() < 0.6) {
      assert.equal(map.set(key, op), model.set(key, op));
    } else {
      assert.equal(map.delete(key), model.delete(key));
    }
    if (op % 97 === 0) taken.push({ snapshot: map.snapshot(), model: model.clone(), at: op });
    if (op === 3001) {
      // A replace, too, leaves the snapshots before it alone.
      const entries = model.keys.filter((_, i) => i % 2 === 0).map((k, i): [string, number] => [k, -i]);
      map.replace(entries);
      const replaced = new Model();
      for (const [k, v] of entries) replaced.set(k, v);
      model.keys.splice(0, Infinity, ...replaced.keys);
      model.values.splice(0, Infinity, ...replaced.values);
      taken.push({ snapshot: map.snapshot(), model: model.clone(), at: op });
    }
  }
  assert.ok(taken.length > 60);
  for (const { snapshot, model: then, at } of taken) {
    try {
      checkView(snapshot, then);
    } catch (error) {
      throw new Error(`the snapshot taken after op ${at} changed`, { cause: error });
    }
  }
  checkView(map, model);
  const snapshot = map.snapshot();
  assert.equal((snapshot as Partial<OrderedMap<number>>).set, undefined, 'a snapshot has no writes');
});

test('OrderedMap: an iterator reads the version it started on', () => {
  const map = newOrderedMap<number>();
  const model = new Model();
  for (let i = 0; i < 500; i++) {
    map.set(keyOf(i), i);
    model.set(keyOf(i), i);
  }
  const after = model.clone();
  const seen: number[] = [];
  let i = 0;
  for (const value of map.values()) {
    seen.push(value);
    // Writes while iterating: deletions ahead, insertions, and a replace half way.
    assert.equal(map.delete(keyOf(499 - i)), after.delete(keyOf(499 - i)));
    assert.equal(map.set(`${keyOf(i)}-new`, -i), after.set(`${keyOf(i)}-new`, -i));
    if (i === 250) {
      map.replace([['a', 1]]);
      after.keys.splice(0, Infinity, 'a');
      after.values.splice(0, Infinity, 1);
    }
    i++;
  }
  assert.deepEqual(seen, model.values);
  checkView(map, after);
});

test('OrderedMap: replace bulk-loads entries in any order, the last duplicate winning', () => {
  const random = seededRandom(37);
  const map = newOrderedMap<number>();
  map.set('stale', 1);
  const before = map.snapshot();

  for (const size of [0, 1, 2, MIN_NODE_ENTRIES, MAX_NODE_ENTRIES, MAX_NODE_ENTRIES + 1, 1000, MAX_NODE_ENTRIES ** 2 + 1, 5000]) {
    const model = new Model();
    const entries: [string, number][] = [];
    for (let i = 0; i < size; i++) entries.push([keyOf(i), i]);
    // Duplicates, later in the input than the first occurrence: the later value wins.
    for (let i = 0; i < size; i += 7) entries.push([keyOf(i), -i]);
    const input = shuffled(entries, random);
    for (const [key, value] of input) model.set(key, value);
    map.replace(input);
    checkView(map, model);

    // The same from sorted input (the apiserver's LIST order), from a Map, and from a generator.
    const sorted = model.keys.map((key, i): [string, number] => [key, model.values[i] ?? Number.NaN]);
    map.replace(sorted);
    checkView(map, model);
    map.replace(new Map(sorted));
    checkView(map, model);
    map.replace(
      (function* () {
        yield* sorted;
      })(),
    );
    checkView(map, model);

    // A packed tree takes writes: the first insert into a full leaf splits it.
    for (let i = 0; i < 200; i++) {
      const key = keyOf(randomInt(random, size * 2 + 10));
      if (random() < 0.5) assert.equal(map.set(key, i), model.set(key, i));
      else assert.equal(map.delete(key), model.delete(key));
    }
    checkView(map, model);
  }
  checkView(before, new Model(['stale'], [1]));
});

test('OrderedMap: randomized operations match a sorted array, weights of ranges included (seeded)', () => {
  const fromEnv = process.env.ORDERED_MAP_SEED;
  const seeds = fromEnv !== undefined && fromEnv !== '' ? [Number(fromEnv)] : [1, 0x5eed, 20240601];
  const weigh = (value: number): number => (value % 7) + 1;
  for (const seed of seeds) {
    const random = seededRandom(seed);
    const map = newOrderedMap<number>(weigh);
    const model = new Model();
    const KEYS = 2000;
    let op = 0;
    try {
      for (; op < 8000; op++) {
        const key = keyOf(randomInt(random, KEYS));
        const dice = random();
        if (dice < 0.5) {
          assert.equal(map.set(key, op), model.set(key, op), `set(${key})`);
        } else if (dice < 0.88) {
          assert.equal(map.delete(key), model.delete(key), `delete(${key})`);
        } else if (dice < 0.999) {
          const rank = map.lowerBound(key);
          assert.equal(rank, model.lowerBound(key), `lowerBound(${key})`);
          assert.equal(map.at(rank), model.values[rank]);
          const to = rank + randomInt(random, 80) - 10;
          assert.deepEqual([...map.values(rank, to)], expectedRange(model, rank, to), `values(${rank}, ${to})`);
          const weight = expectedRange(model, rank, to).reduce((sum, v) => sum + weigh(v), 0);
          assert.equal(map.weight(rank, to), weight, `weight(${rank}, ${to})`);
        } else {
          const entries = model.keys.filter(() => random() < 0.5).map((k): [string, number] => [k, op]);
          map.replace(shuffled(entries, random));
          model.keys.length = 0;
          model.values.length = 0;
          for (const [k, v] of entries) model.set(k, v);
        }
        if (op % 250 === 0) checkView(map, model);
      }
      checkView(map, model);
    } catch (error) {
      throw new Error(`randomized test failed with seed ${seed} at op ${op} (rerun: ORDERED_MAP_SEED=${seed})`, { cause: error });
    }
  }
});

test('OrderedMap: sizes 0, 1 and around the fan-out boundaries', () => {
  const MAX = MAX_NODE_ENTRIES;
  const MIN = MIN_NODE_ENTRIES;
  const sizes = [0, 1, 2, MIN - 1, MIN, MIN + 1, MAX - 1, MAX, MAX + 1, 2 * MAX - 1, 2 * MAX, 2 * MAX + 1];
  sizes.push(MAX * MAX - 1, MAX * MAX, MAX * MAX + 1, MAX * MAX * 2 + 1);
  const random = seededRandom(53);
  for (const size of sizes) {
    const model = new Model();
    for (let i = 0; i < size; i++) model.set(keyOf(i), i);
    const entries = model.keys.map((key, i): [string, number] => [key, model.values[i] ?? Number.NaN]);
    // Every step is checked for the small sizes; the large ones every so often.
    const every = size <= 2 * MAX + 1 ? 1 : 97;

    const builds: [string, () => OrderedMap<number>][] = [
      [
        'ascending sets',
        () => {
          const map = newOrderedMap<number>();
          for (const [i, [key, value]] of entries.entries()) {
            map.set(key, value);
            if (i % every === 0) checkInvariants(map);
          }
          return map;
        },
      ],
      [
        'descending sets',
        () => {
          const map = newOrderedMap<number>();
          for (const [i, [key, value]] of entries.toReversed().entries()) {
            map.set(key, value);
            if (i % every === 0) checkInvariants(map);
          }
          return map;
        },
      ],
      [
        'replace',
        () => {
          const map = newOrderedMap<number>();
          map.replace(entries);
          return map;
        },
      ],
    ];
    for (const [how, build] of builds) {
      const map = build();
      try {
        checkView(map, model);
        // Then all deleted, ascending for one build, in random order for the others.
        const order = how === 'replace' ? model.keys.slice() : shuffled(model.keys, random);
        for (const [i, key] of order.entries()) {
          assert.equal(map.delete(key), model.values[model.lowerBound(key)]);
          assert.equal(map.size, size - i - 1);
          if (i % every === 0) checkInvariants(map);
        }
        checkView(map, new Model());
      } catch (error) {
        throw new Error(`size ${size} built by ${how}`, { cause: error });
      }
    }
  }
});

test('OrderedMap: 100,000 keys inserted, then all deleted', () => {
  const N = 100_000;
  const random = seededRandom(97);
  const keys = Array.from({ length: N }, (_, i) => keyOf(i));
  const sorted = keys.slice().sort();
  const map = newOrderedMap<number>();
  for (const [i, key] of shuffled(keys, random).entries()) {
    assert.equal(map.set(key, Number(key.slice(key.lastIndexOf('-') + 1))), undefined);
    if (i % 25_000 === 0) checkInvariants(map);
  }
  checkInvariants(map);
  assert.equal(map.size, N);
  const values = [...map.values()];
  assert.deepEqual(
    values,
    sorted.map((key) => Number(key.slice(key.lastIndexOf('-') + 1))),
  );
  for (let probe = 0; probe < 1000; probe++) {
    const rank = randomInt(random, N);
    const key = sorted[rank] ?? '';
    assert.equal(map.lowerBound(key), rank);
    assert.equal(map.at(rank), values[rank]);
  }
  const full = map.snapshot();

  for (const [i, key] of shuffled(keys, random).entries()) {
    assert.notEqual(map.delete(key), undefined);
    if (i % 25_000 === 0) checkInvariants(map);
  }
  checkInvariants(map);
  assert.equal(map.size, 0);
  assert.deepEqual([...map.values()], []);
  assert.equal(map.at(0), undefined);
  // The snapshot taken when full still is.
  checkInvariants(full);
  assert.equal(full.size, N);
  assert.equal(full.at(N - 1), values[N - 1]);
});

test('OrderedMap: weights of ranges, whole and empty, and of a snapshot after later writes', () => {
  const map = newOrderedMap<string>((value) => value.length);
  assert.equal(map.weight(), 0, 'empty');
  for (let i = 0; i < 1000; i++) map.set(keyOf(i), 'x'.repeat(i % 10));
  const total = [...map.values()].reduce((sum, v) => sum + v.length, 0);
  assert.equal(map.weight(), total);
  assert.equal(map.weight(0, map.size), total);
  assert.equal(map.weight(-5, map.size + 5), total, 'clamped as values()');
  assert.equal(map.weight(10, 10), 0);
  assert.equal(map.weight(20, 10), 0);
  const from = map.lowerBound('ns-3/');
  const to = map.lowerBound('ns-30');
  assert.equal(
    map.weight(from, to),
    [...map.values(from, to)].reduce((sum, v) => sum + v.length, 0),
    'one namespace',
  );
  const before = map.snapshot();
  map.set(keyOf(0), 'y'.repeat(50));
  map.delete(keyOf(1));
  assert.equal(before.weight(), total, 'a snapshot weighs what it held');
  assert.equal(map.weight(), total + 50 - 0 - 1);
  checkInvariants(map);
  checkInvariants(before);
  // Unweighed maps weigh nothing.
  const plain = newOrderedMap<number>();
  plain.set('a', 1);
  assert.equal(plain.weight(), 0);
});

test('OrderedMap: checkInvariants rejects what is not one of its trees', () => {
  const foreign: OrderedView<number> = {
    size: 0,
    get: () => undefined,
    lowerBound: () => 0,
    at: () => undefined,
    values: () => [][Symbol.iterator](),
    weight: () => 0,
  };
  assert.throws(() => {
    checkInvariants(foreign);
  }, /not an ordered-map view/);
});
