/**
 * apimachinery pkg/util/resourceversion CompareResourceVersion: the order of two resourceVersions
 * of objects of one resource, for read-your-writes (has the informer's store seen my write yet?)
 * and for telling a newer object from an older one.
 *
 * Its rules, copied: a resourceVersion is well formed when it is a decimal integer greater than
 * zero, of any length, with no leading zero ("0" is the special value of list and watch requests,
 * never an object's); a shorter one is smaller, and two of one length compare as strings. Any
 * other string is an error, never an order: resourceVersions are opaque where they are not
 * well formed (another storage than etcd), and guessing would be wrong.
 */

/** apimachinery InvalidResourceVersion: a resourceVersion compareResourceVersion cannot order. */
export class InvalidResourceVersionError extends Error {
  /** The resourceVersion as given. */
  readonly resourceVersion: string;

  constructor(resourceVersion: string) {
    // resourceversion.go: "resource version is not well formed: %s"
    super(`resource version is not well formed: ${resourceVersion}`);
    this.name = 'InvalidResourceVersionError';
    this.resourceVersion = resourceVersion;
  }
}

/**
 * apimachinery CompareResourceVersion: -1 if `a` is older than `b`, 0 if they are the same, +1 if
 * `a` is newer. Only meaningful for two objects of the same resource. Throws
 * InvalidResourceVersionError for a resourceVersion that is not well formed (empty, "0", leading
 * zeros, anything but digits), `a` checked first.
 */
export function compareResourceVersion(a: string, b: string): -1 | 0 | 1 {
  if (!isWellFormed(a)) throw new InvalidResourceVersionError(a);
  if (!isWellFormed(b)) throw new InvalidResourceVersionError(b);
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** resourceversion.go isWellFormed: digits only, at least one, the first not '0'. */
function isWellFormed(rv: string): boolean {
  return /^[1-9][0-9]*$/.test(rv);
}
