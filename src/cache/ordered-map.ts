/**
 * The key-ordered store of a watch cache (kube-apiserver's cacher/store_btree.go, a google/btree
 * whose Clone() makes snapshots cheap): a persistent B+-tree map from cache keys (`namespace/name`
 * or `name`) to values, ordered by JavaScript string comparison (byte order for ASCII keys).
 *
 * Persistence by path copying: a node is never mutated once built. A write copies the nodes on its
 * root-to-leaf path (O(log n) arrays of at most MAX_NODE_ENTRIES) and shares every other node with
 * the previous version, so snapshot() only captures the root: O(1), and a snapshot never changes.
 * Branches keep the size of their subtree, so rank queries (lowerBound, at, values(from, to)) are
 * O(log n), which is what paging a LIST (limit/continue) from a snapshot needs. Every node also
 * keeps the total weight of its values (the map's `weigh`: a watch cache weighs an object by its
 * bytes in a LIST), so the weight of any rank range is O(log n) too: a LIST of 100,000 objects
 * knows its length without visiting them.
 *
 * Invariants (checkInvariants below verifies them all):
 * - every leaf is at the same depth;
 * - a leaf's keys are strictly increasing, and values[i] is the value of keys[i];
 * - a branch has children.length - 1 separator keys, strictly increasing, and
 *   keys[i - 1] <= every key under children[i] < keys[i];
 * - a branch's size is the sum of its children's sizes (a leaf's size is its key count);
 * - a node's weight is the sum of its values' weights (a leaf) or of its children's (a branch);
 * - every node but the root holds between MIN_NODE_ENTRIES and MAX_NODE_ENTRIES entries (a leaf)
 *   or children (a branch); a root leaf holds 0 to MAX_NODE_ENTRIES entries, a root branch 2 to
 *   MAX_NODE_ENTRIES children.
 *
 * Synchronous and free of callbacks (keys are compared with `<`), so a write cannot be re-entered.
 */

/** An immutable view: a snapshot never changes. */
export interface OrderedView<V> {
  readonly size: number;
  get(key: string): V | undefined;
  /** The rank (0-based position) of the first key >= `key`; `size` when none. O(log n). */
  lowerBound(key: string): number;
  /** The value at `rank`, or undefined (also for a rank that is not an integer in [0, size)). O(log n). */
  at(rank: number): V | undefined;
  /**
   * Values in key order from rank `from` (inclusive, default 0) to `to` (exclusive, default size).
   * Both are truncated to integers and clamped to [0, size]; `to <= from` yields nothing. O(log n + k).
   * The iterator reads the version current when values() was called: writes made while iterating
   * do not affect it.
   */
  values(from?: number, to?: number): IterableIterator<V>;
  /** The total weight of the values from rank `from` to `to` (clamped as values()). O(log n). */
  weight(from?: number, to?: number): number;
}

export interface OrderedMap<V> extends OrderedView<V> {
  /** Sets key to value; returns the previous value. O(log n) node copies. */
  set(key: string, value: V): V | undefined;
  /** Removes key; returns the removed value. O(log n); a missing key copies nothing. */
  delete(key: string): V | undefined;
  /** Replaces the whole contents with `entries`, built in O(n) (bulk-load), any order in; duplicates: last wins. */
  replace(entries: Iterable<readonly [string, V]>): void;
  /** The current contents as an immutable view, in O(1): later set/delete/replace never change it. */
  snapshot(): OrderedView<V>;
}

/** What a value weighs (a non-negative integer, the same every time for the same value). */
export type Weigh<V> = (value: V) => number;

/** An empty map; `weigh` gives weight() its measure (default: every value weighs 0). */
export function newOrderedMap<V>(weigh: Weigh<V> = () => 0): OrderedMap<V> {
  return new PersistentBPlusTree<V>(weigh);
}

/**
 * Most entries of a leaf, most children of a branch. 32, measured on 100k keys (Node 24, best of 7,
 * fan-outs interleaved in one process): from 16 to 64, set, delete + insert and lowerBound + at
 * are within about 15% of each other (a search is dominated by its ~17 key comparisons, which do
 * not depend on the fan-out); at 8 writes are slower (more levels to copy, more splits and merges),
 * at 128 both writes (each copy is O(fan-out)) and rank queries (a linear scan of child sizes per
 * level) are 15-45% slower than at 32, for a gain under 10% on full iteration. 32 is also kube-apiserver's
 * choice: btreeDegree = 16 in google/btree holds at most 31 items and 32 children per node.
 */
export const MAX_NODE_ENTRIES = 32;

/**
 * Fewest entries (leaf) or children (branch) of a node other than the root: half of MAX, so that an
 * underfull node (MIN - 1) merged with a sibling at MIN fits in MAX, and a node split at MAX + 1
 * gives two halves of at least MIN.
 */
export const MIN_NODE_ENTRIES = MAX_NODE_ENTRIES >>> 1;

interface Leaf<V> {
  readonly leaf: true;
  /** Strictly increasing. */
  readonly keys: readonly string[];
  /** values[i] is the value of keys[i]. */
  readonly values: readonly V[];
  /** The sum of its values' weights. */
  readonly weight: number;
}

interface Branch<V> {
  readonly leaf: false;
  /** Separators, children.length - 1 of them: keys[i - 1] <= every key under children[i] < keys[i]. */
  readonly keys: readonly string[];
  readonly children: readonly TreeNode<V>[];
  /** Entries under this branch: the sum of its children's sizes. */
  readonly size: number;
  /** The sum of its children's weights. */
  readonly weight: number;
}

type TreeNode<V> = Leaf<V> | Branch<V>;

/**
 * What one write did, filled in by insert() and remove() as they unwind; one per map, reused (and
 * cleared after each write, so that it holds no value alive).
 */
interface WriteResult<V> {
  /** The map's measure, for the leaves a write makes. */
  readonly weigh: Weigh<V>;
  /** The key was present: set replaced its value, delete removed it. */
  found: boolean;
  previous: V | undefined;
  /** When the node just returned was split: its right half, and the separator before it. */
  right: TreeNode<V> | undefined;
  separator: string;
}

function newLeaf<V>(keys: readonly string[], values: readonly V[], weigh: Weigh<V>): Leaf<V> {
  let weight = 0;
  for (const value of values) weight += weigh(value);
  return { leaf: true, keys, values, weight };
}

function newBranch<V>(keys: readonly string[], children: readonly TreeNode<V>[], size?: number): Branch<V> {
  let total = size ?? 0;
  if (size === undefined) for (const child of children) total += sizeOf(child);
  let weight = 0;
  for (const child of children) weight += child.weight;
  return { leaf: false, keys, children, size: total, weight };
}

/** Entries under `node`. */
function sizeOf<V>(node: TreeNode<V>): number {
  return node.leaf ? node.keys.length : node.size;
}

/** What MIN_NODE_ENTRIES and MAX_NODE_ENTRIES bound: a leaf's entries, a branch's children. */
function widthOf<V>(node: TreeNode<V>): number {
  return node.leaf ? node.keys.length : node.children.length;
}

function childAt<V>(branch: Branch<V>, index: number): TreeNode<V> {
  const child = branch.children[index];
  if (child === undefined) throw new Error(`ordered-map: branch has no child ${index} (invariant broken)`);
  return child;
}

function keyAt(keys: readonly string[], index: number): string {
  const key = keys[index];
  if (key === undefined) throw new Error(`ordered-map: node has no key ${index} (invariant broken)`);
  return key;
}

/** The first index whose key is >= `key`; keys.length when none. */
function lowerIndex(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] ?? '') < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose key is > `key`; keys.length when none. In a branch: the child that may hold `key`. */
function upperIndex(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key < (keys[mid] ?? '')) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function find<V>(root: TreeNode<V>, key: string): V | undefined {
  let node = root;
  while (!node.leaf) node = childAt(node, upperIndex(node.keys, key));
  const index = lowerIndex(node.keys, key);
  return node.keys[index] === key ? node.values[index] : undefined;
}

function rankOf<V>(root: TreeNode<V>, key: string): number {
  let rank = 0;
  let node = root;
  while (!node.leaf) {
    // Every key under the children before `index` is < a separator <= key.
    const index = upperIndex(node.keys, key);
    for (let i = 0; i < index; i++) rank += sizeOf(childAt(node, i));
    node = childAt(node, index);
  }
  return rank + lowerIndex(node.keys, key);
}

/**
 * The leaf holding rank `rank` (0 <= rank < size, or 0 in an empty tree), the rank within it, and
 * the weight of the subtrees passed on the way (every value before the leaf).
 */
function descend<V>(
  root: TreeNode<V>,
  rank: number,
  path?: Frame<V>[],
): { readonly leaf: Leaf<V>; readonly index: number; readonly weightBefore: number } {
  let node = root;
  let rest = rank;
  let weightBefore = 0;
  while (!node.leaf) {
    let index = 0;
    let child = childAt(node, 0);
    while (rest >= sizeOf(child) && index + 1 < node.children.length) {
      rest -= sizeOf(child);
      weightBefore += child.weight;
      index++;
      child = childAt(node, index);
    }
    path?.push({ branch: node, index });
    node = child;
  }
  return { leaf: node, index: rest, weightBefore };
}

function valueAt<V>(root: TreeNode<V>, rank: number): V | undefined {
  if (!Number.isInteger(rank) || rank < 0 || rank >= sizeOf(root)) return undefined;
  const { leaf, index } = descend(root, rank);
  return leaf.values[index];
}

/** The total weight of the first `rank` values (0 <= rank <= size). */
function weightBefore<V>(root: TreeNode<V>, rank: number, weigh: Weigh<V>): number {
  if (rank >= sizeOf(root)) return root.weight;
  const { leaf, index, weightBefore: weight } = descend(root, rank);
  let total = weight;
  for (let i = 0; i < index; i++) total += weigh(leaf.values[i] as V);
  return total;
}

/** A rank argument truncated to an integer and clamped to [0, size] (NaN is 0). */
function clampRank(rank: number, size: number): number {
  if (!(rank > 0)) return 0;
  return rank >= size ? size : Math.trunc(rank);
}

/**
 * Sets key in the subtree `node`: returns its new version (or, when it split, the left half, with
 * the right half in `result.right`). Copies only the nodes on the path; a replaced value keeps
 * the leaf's keys array, and an unsplit branch its separators, since neither changed.
 */
function insert<V>(node: TreeNode<V>, key: string, value: V, result: WriteResult<V>): TreeNode<V> {
  if (node.leaf) {
    const index = lowerIndex(node.keys, key);
    if (node.keys[index] === key) {
      result.found = true;
      result.previous = node.values[index];
      return newLeaf(node.keys, node.values.with(index, value), result.weigh);
    }
    const keys = node.keys.toSpliced(index, 0, key);
    const values = node.values.toSpliced(index, 0, value);
    if (keys.length <= MAX_NODE_ENTRIES) return newLeaf(keys, values, result.weigh);
    const mid = keys.length >>> 1;
    result.right = newLeaf(keys.slice(mid), values.slice(mid), result.weigh);
    result.separator = keyAt(keys, mid);
    return newLeaf(keys.slice(0, mid), values.slice(0, mid), result.weigh);
  }
  const index = upperIndex(node.keys, key);
  const child = insert(childAt(node, index), key, value, result);
  const size = result.found ? node.size : node.size + 1;
  const right = result.right;
  if (right === undefined) return newBranch(node.keys, node.children.with(index, child), size);
  result.right = undefined;
  const keys = node.keys.toSpliced(index, 0, result.separator);
  const children = node.children.toSpliced(index, 1, child, right);
  if (children.length <= MAX_NODE_ENTRIES) return newBranch(keys, children, size);
  // MAX + 1 children: the left half keeps `mid` of them, the separator between the halves moves up.
  const mid = children.length >>> 1;
  result.right = newBranch(keys.slice(mid), children.slice(mid));
  result.separator = keyAt(keys, mid - 1);
  return newBranch(keys.slice(0, mid - 1), children.slice(0, mid));
}

/**
 * Removes key from the subtree `node`: returns its new version, which may be underfull (one below
 * MIN) for the parent to rebalance; `node` itself when the key is absent (nothing copied).
 */
function remove<V>(node: TreeNode<V>, key: string, result: WriteResult<V>): TreeNode<V> {
  if (node.leaf) {
    const index = lowerIndex(node.keys, key);
    if (node.keys[index] !== key) return node;
    result.found = true;
    result.previous = node.values[index];
    return newLeaf(node.keys.toSpliced(index, 1), node.values.toSpliced(index, 1), result.weigh);
  }
  const index = upperIndex(node.keys, key);
  const before = childAt(node, index);
  const child = remove(before, key, result);
  if (child === before) return node;
  const size = node.size - 1;
  if (widthOf(child) >= MIN_NODE_ENTRIES) return newBranch(node.keys, node.children.with(index, child), size);
  // Underfull: rebalance with the left sibling if any, else the right one (a non-root branch has >= 2 children).
  const at = index > 0 ? index - 1 : index;
  const left = at === index ? child : childAt(node, at);
  const right = at === index ? childAt(node, index + 1) : child;
  const joined = join(left, keyAt(node.keys, at), right, result);
  const split = result.right;
  if (split === undefined) return newBranch(node.keys.toSpliced(at, 1), node.children.toSpliced(at, 2, joined), size);
  result.right = undefined;
  return newBranch(node.keys.with(at, result.separator), node.children.toSpliced(at, 2, joined, split), size);
}

/**
 * Two adjacent siblings (one underfull, the other at least MIN) as one node when their entries fit
 * in MAX (merge), else as two halves of at least MIN each (borrow: the right half in
 * `result.right`, its separator in `result.separator`). `separator` is the parent's key between them.
 */
function join<V>(left: TreeNode<V>, separator: string, right: TreeNode<V>, result: WriteResult<V>): TreeNode<V> {
  if (left.leaf && right.leaf) {
    const keys = left.keys.concat(right.keys);
    const values = left.values.concat(right.values);
    if (keys.length <= MAX_NODE_ENTRIES) return newLeaf(keys, values, result.weigh);
    const mid = keys.length >>> 1;
    result.right = newLeaf(keys.slice(mid), values.slice(mid), result.weigh);
    result.separator = keyAt(keys, mid);
    return newLeaf(keys.slice(0, mid), values.slice(0, mid), result.weigh);
  }
  if (!left.leaf && !right.leaf) {
    // The parent's separator comes down between the two sets of children.
    const keys = [...left.keys, separator, ...right.keys];
    const children = left.children.concat(right.children);
    if (children.length <= MAX_NODE_ENTRIES) return newBranch(keys, children, left.size + right.size);
    const mid = children.length >>> 1;
    result.right = newBranch(keys.slice(mid), children.slice(mid));
    result.separator = keyAt(keys, mid - 1);
    return newBranch(keys.slice(0, mid - 1), children.slice(0, mid));
  }
  throw new Error('ordered-map: siblings at different depths (invariant broken)');
}

/**
 * A tree of sorted, unique keys built bottom-up in O(n): each level cut into the fewest nodes of at
 * most MAX, sizes differing by at most one (so at least MIN when there are two or more: with
 * g = ceil(n / MAX) >= 2 nodes, n / g > (g - 1) * MAX / g >= MAX / 2). Leaves are packed full,
 * for the least memory and the fastest iteration; the first insert into a full leaf splits it.
 */
function build<V>(keys: readonly string[], values: readonly V[], weigh: Weigh<V>): TreeNode<V> {
  let level: TreeNode<V>[] = [];
  /** The smallest key under each node of `level`: the separators of the level above. */
  let firsts: string[] = [];
  const leaves = Math.max(1, Math.ceil(keys.length / MAX_NODE_ENTRIES));
  for (let i = 0; i < leaves; i++) {
    const from = Math.floor((i * keys.length) / leaves);
    const to = Math.floor(((i + 1) * keys.length) / leaves);
    level.push(newLeaf(keys.slice(from, to), values.slice(from, to), weigh));
    firsts.push(keys[from] ?? '');
  }
  while (level.length > 1) {
    const count = level.length;
    const branches = Math.ceil(count / MAX_NODE_ENTRIES);
    const next: TreeNode<V>[] = [];
    const nextFirsts: string[] = [];
    for (let i = 0; i < branches; i++) {
      const from = Math.floor((i * count) / branches);
      const to = Math.floor(((i + 1) * count) / branches);
      next.push(newBranch(firsts.slice(from + 1, to), level.slice(from, to)));
      nextFirsts.push(keyAt(firsts, from));
    }
    level = next;
    firsts = nextFirsts;
  }
  const root = level[0];
  if (root === undefined) throw new Error('ordered-map: bulk load built no root');
  return root;
}

/** `entries` as sorted, unique keys and their values: stable sort, so the last duplicate wins. */
function sortedEntries<V>(entries: Iterable<readonly [string, V]>): { readonly keys: string[]; readonly values: V[] } {
  const list = Array.from(entries);
  let sorted = true;
  for (let i = 1; i < list.length && sorted; i++) sorted = (list[i - 1]?.[0] ?? '') < (list[i]?.[0] ?? '');
  if (!sorted) list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const keys: string[] = [];
  const values: V[] = [];
  for (let i = 0; i < list.length; i++) {
    const entry = list[i];
    if (entry === undefined || list[i + 1]?.[0] === entry[0]) continue;
    keys.push(entry[0]);
    values.push(entry[1]);
  }
  return { keys, values };
}

/** One branch on an iterator's path, and the index of the child it is in. */
interface Frame<V> {
  readonly branch: Branch<V>;
  index: number;
}

/** Values in key order from one rank, `count` of them: O(log n) to start, amortized O(1) per value. */
class RangeIterator<V> implements IterableIterator<V> {
  /** The branches from the root down to #leaf's parent, each with the index of the child taken. */
  readonly #path: Frame<V>[] = [];
  #leaf: Leaf<V>;
  #index: number;
  #remaining: number;

  constructor(root: TreeNode<V>, from: number, count: number) {
    const { leaf, index } = descend(root, from, this.#path);
    this.#leaf = leaf;
    this.#index = index;
    this.#remaining = count;
  }

  next(): IteratorResult<V, undefined> {
    if (this.#remaining <= 0) return { done: true, value: undefined };
    if (this.#index >= this.#leaf.values.length) this.#nextLeaf();
    this.#remaining--;
    // In range: #nextLeaf moved to a leaf that has values (non-root leaves hold at least MIN).
    return { done: false, value: this.#leaf.values[this.#index++] as V };
  }

  [Symbol.iterator](): this {
    return this;
  }

  /** Up to the nearest branch with a next child, then down its leftmost path. */
  #nextLeaf(): void {
    let frame = this.#path.at(-1);
    while (frame !== undefined && frame.index + 1 >= frame.branch.children.length) {
      this.#path.pop();
      frame = this.#path.at(-1);
    }
    if (frame === undefined) throw new Error('ordered-map: iterated past the last leaf (invariant broken)');
    frame.index++;
    let node = childAt(frame.branch, frame.index);
    while (!node.leaf) {
      this.#path.push({ branch: node, index: 0 });
      node = childAt(node, 0);
    }
    this.#leaf = node;
    this.#index = 0;
  }
}

function rangeOf<V>(root: TreeNode<V>, from: number | undefined, to: number | undefined): IterableIterator<V> {
  const size = sizeOf(root);
  const lo = clampRank(from ?? 0, size);
  const hi = clampRank(to ?? size, size);
  return new RangeIterator(root, lo, hi - lo);
}

/** The door checkInvariants uses into both classes: their current root. */
const kRoot = Symbol('ordered-map.root');

/** The reads of a tree, over whatever root the subclass holds now. */
abstract class TreeReader<V> implements OrderedView<V> {
  readonly #weigh: Weigh<V>;

  constructor(weigh: Weigh<V>) {
    this.#weigh = weigh;
  }

  /** The door checkInvariants uses, and the reads' root. */
  abstract [kRoot](): TreeNode<V>;

  /** The measure of weight(), for checkInvariants and snapshots. */
  weigh(): Weigh<V> {
    return this.#weigh;
  }

  get size(): number {
    return sizeOf(this[kRoot]());
  }

  get(key: string): V | undefined {
    return find(this[kRoot](), key);
  }

  lowerBound(key: string): number {
    return rankOf(this[kRoot](), key);
  }

  at(rank: number): V | undefined {
    return valueAt(this[kRoot](), rank);
  }

  values(from?: number, to?: number): IterableIterator<V> {
    return rangeOf(this[kRoot](), from, to);
  }

  weight(from?: number, to?: number): number {
    const root = this[kRoot]();
    const size = sizeOf(root);
    const lo = clampRank(from ?? 0, size);
    const hi = clampRank(to ?? size, size);
    if (hi <= lo) return 0;
    return weightBefore(root, hi, this.#weigh) - weightBefore(root, lo, this.#weigh);
  }
}

/** A version of the tree: its root never changes. */
class Snapshot<V> extends TreeReader<V> {
  readonly #root: TreeNode<V>;

  constructor(root: TreeNode<V>, weigh: Weigh<V>) {
    super(weigh);
    this.#root = root;
  }

  [kRoot](): TreeNode<V> {
    return this.#root;
  }
}

/** Invariant: #snapshot, when set, has #root as its root (it is dropped by every write that changes #root). */
class PersistentBPlusTree<V> extends TreeReader<V> implements OrderedMap<V> {
  #root: TreeNode<V>;
  #snapshot: Snapshot<V> | undefined;
  readonly #result: WriteResult<V>;

  constructor(weigh: Weigh<V>) {
    super(weigh);
    this.#root = newLeaf<V>([], [], weigh);
    this.#result = { weigh, found: false, previous: undefined, right: undefined, separator: '' };
  }

  set(key: string, value: V): V | undefined {
    const result = this.#result;
    const left = insert(this.#root, key, value, result);
    const right = result.right;
    // A split root: the tree grows by one level.
    this.#setRoot(right === undefined ? left : newBranch([result.separator], [left, right]));
    return this.#finish();
  }

  delete(key: string): V | undefined {
    const result = this.#result;
    let root = remove(this.#root, key, result);
    if (root === this.#root) return this.#finish();
    // A root branch left with one child: the tree shrinks by one level.
    while (!root.leaf && root.children.length === 1) root = childAt(root, 0);
    this.#setRoot(root);
    return this.#finish();
  }

  replace(entries: Iterable<readonly [string, V]>): void {
    const { keys, values } = sortedEntries(entries);
    this.#setRoot(build(keys, values, this.weigh()));
  }

  snapshot(): OrderedView<V> {
    this.#snapshot ??= new Snapshot(this.#root, this.weigh());
    return this.#snapshot;
  }

  [kRoot](): TreeNode<V> {
    return this.#root;
  }

  #setRoot(root: TreeNode<V>): void {
    this.#root = root;
    this.#snapshot = undefined;
  }

  /** The previous value of the write just done; clears #result for the next one. */
  #finish(): V | undefined {
    const result = this.#result;
    const previous = result.previous;
    result.found = false;
    result.previous = undefined;
    result.right = undefined;
    result.separator = '';
    return previous;
  }
}

/**
 * Throws an Error naming the first broken invariant (see the top of this file) of the tree behind
 * `view`, a map or a snapshot from this module. For tests: O(n).
 */
export function checkInvariants<V>(view: OrderedView<V>): void {
  if (!(view instanceof TreeReader)) throw new Error('not an ordered-map view');
  const root: TreeNode<V> = view[kRoot]();
  const weigh = view.weigh();
  let leafDepth = -1;
  /** Checks the subtree at `depth` whose keys must be in [low, high) (undefined: unbounded); returns its size. */
  const visit = (node: TreeNode<V>, depth: number, low: string | undefined, high: string | undefined, isRoot: boolean): number => {
    const width = widthOf(node);
    if (width > MAX_NODE_ENTRIES) throw new Error(`node at depth ${depth} has ${width} > MAX entries`);
    if (!isRoot && width < MIN_NODE_ENTRIES) throw new Error(`node at depth ${depth} has ${width} < MIN entries`);
    const keys = node.keys;
    for (let i = 0; i < keys.length; i++) {
      const key = keyAt(keys, i);
      if (i > 0 && !(keyAt(keys, i - 1) < key)) throw new Error(`keys not increasing at depth ${depth}: ${key}`);
      if (low !== undefined && key < low) throw new Error(`key ${key} below its lower bound ${low}`);
      if (high !== undefined && !(key < high)) throw new Error(`key ${key} not below its upper bound ${high}`);
    }
    if (node.leaf) {
      if (leafDepth === -1) leafDepth = depth;
      if (depth !== leafDepth) throw new Error(`leaves at depths ${leafDepth} and ${depth}`);
      if (node.values.length !== keys.length) throw new Error(`leaf has ${keys.length} keys, ${node.values.length} values`);
      const weight = node.values.reduce((sum, value) => sum + weigh(value), 0);
      if (weight !== node.weight) throw new Error(`leaf at depth ${depth} has weight ${node.weight}, its values ${weight}`);
      return keys.length;
    }
    if (isRoot && width < 2) throw new Error('root branch has fewer than 2 children');
    if (keys.length !== width - 1) throw new Error(`branch has ${width} children, ${keys.length} separators`);
    let size = 0;
    for (let i = 0; i < width; i++) {
      size += visit(childAt(node, i), depth + 1, i > 0 ? keyAt(keys, i - 1) : low, i < keys.length ? keyAt(keys, i) : high, false);
    }
    if (size !== node.size) throw new Error(`branch at depth ${depth} has size ${node.size}, its children ${size}`);
    const weight = node.children.reduce((sum, child) => sum + child.weight, 0);
    if (weight !== node.weight) throw new Error(`branch at depth ${depth} has weight ${node.weight}, its children ${weight}`);
    return size;
  };
  visit(root, 0, undefined, undefined, true);
}
