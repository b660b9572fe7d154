/**
 * The query of a LIST or WATCH, decoded and checked in the apiserver's order
 * (endpoints/handlers/get.go ListResource):
 *   1. the parameter codec decodes it (runtime/conversion.go): a bad integer is a 400 with
 *      strconv's message; fields are converted in ListOptions declaration order, and only the
 *      first value of a repeated parameter counts;
 *   2. SetListOptionsDefaults (meta/internalversion/defaults.go; WatchList is on): a watch from
 *      resourceVersion "" or "0" with neither sendInitialEvents nor resourceVersionMatch becomes
 *      sendInitialEvents=true&resourceVersionMatch=NotOlderThan;
 *   3. ValidateListOptions (meta/internalversion/validation/validation.go): a 422 Invalid listing
 *      every violation.
 * The storage layer then checks the continue token and the resourceVersion (`listStart`).
 */
import type { FieldError } from '../kube/field-error.ts';
import { fieldForbidden, fieldInvalid, fieldNotSupported } from '../kube/field-error.ts';
import { GoNumError, goParseInt64, goParseUint64 } from '../kube/go-strconv.ts';
import type { DecodedContinue } from './continue-token.ts';
import { ContinueTokenError, decodeContinue, invalidContinueToken } from './continue-token.ts';
import type { StatusError } from '../kube/status.ts';
import { badRequest, invalidListOptions, unknownError } from '../kube/status.ts';

export type ResourceVersionMatch = '' | 'Exact' | 'NotOlderThan';

/** metainternalversion.ListOptions as the handler holds it after defaulting and validation. */
export interface ListOptions {
  /** Raw; parsing selectors is the caller's (see the report of what is left). */
  readonly labelSelector: string;
  readonly fieldSelector: string;
  /** From ?watch, or forced by a legacy /watch/ path. */
  readonly watch: boolean;
  readonly allowWatchBookmarks: boolean;
  /** As sent; '' when absent. Parsed by the storage layer (`parseResourceVersion`). */
  readonly resourceVersion: string;
  readonly resourceVersionMatch: ResourceVersionMatch;
  /** undefined when absent (a *int64 upstream); negative and 0 are accepted as sent. */
  readonly timeoutSeconds: number | undefined;
  /** 0 when absent; <= 0 means no limit. */
  readonly limit: number;
  readonly continue: string;
  /** undefined when absent (a *bool upstream: `sendInitialEvents=false` is still "provided"). */
  readonly sendInitialEvents: boolean | undefined;
}

export interface ParseListOptionsOptions {
  /** The path was a legacy `/watch/` one: the request watches, but defaulting and validation see ?watch only (get.go forceWatch). */
  readonly forceWatch?: boolean;
  /** The WatchList feature gate (on by default since v1.32). */
  readonly watchList?: boolean;
}

/** Convert_Slice_string_To_bool: only absence, "false" and "0" (any case) are false; "" is true. */
function goBool(values: readonly string[]): boolean {
  const v = values[0];
  return v !== undefined && !['false', '0'].includes(v.toLowerCase());
}

function goInt64(values: readonly string[]): number | undefined {
  const v = values[0];
  if (v === undefined) return undefined;
  const n = goParseInt64(v);
  if (n instanceof GoNumError) throw badRequest(n.message);
  return Number(n);
}

/** Step 1: the parameter codec. Throws a 400 StatusError for a value it cannot convert. */
export function decodeListOptions(query: URLSearchParams | string): ListOptions {
  const params = typeof query === 'string' ? new URLSearchParams(query.startsWith('?') ? query.slice(1) : query) : query;
  const all = (name: string): string[] => params.getAll(name);
  const first = (name: string): string => all(name)[0] ?? '';
  // Declaration order of metainternalversion.ListOptions: the first failing field wins.
  const labelSelector = first('labelSelector');
  const fieldSelector = first('fieldSelector');
  const watch = goBool(all('watch'));
  const allowWatchBookmarks = goBool(all('allowWatchBookmarks'));
  const resourceVersion = first('resourceVersion');
  const resourceVersionMatch = first('resourceVersionMatch');
  const timeoutSeconds = goInt64(all('timeoutSeconds'));
  const limit = goInt64(all('limit')) ?? 0;
  const cont = first('continue');
  const sendInitialEvents = params.has('sendInitialEvents') ? goBool(all('sendInitialEvents')) : undefined;
  return {
    labelSelector,
    fieldSelector,
    watch,
    allowWatchBookmarks,
    resourceVersion,
    // Any other value is rejected by validation before it is used.
    resourceVersionMatch: resourceVersionMatch as ResourceVersionMatch,
    timeoutSeconds,
    limit,
    continue: cont,
    sendInitialEvents,
  };
}

/** Step 2: SetListOptionsDefaults. */
export function setListOptionsDefaults(o: ListOptions, watchList = true): ListOptions {
  if (!watchList) return o;
  if (o.sendInitialEvents !== undefined || o.resourceVersionMatch !== '') return o;
  const legacy = o.resourceVersion === '' || o.resourceVersion === '0';
  return o.watch && legacy ? { ...o, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' } : o;
}

const RVM = 'resourceVersionMatch';

/** Step 3: ValidateListOptions, every violation in the apiserver's order. */
export function validateListOptions(o: ListOptions, watchList = true): FieldError[] {
  const errs: FieldError[] = [];
  const match: string = o.resourceVersionMatch;
  if (o.watch) {
    // validateWatchOptions
    if (o.sendInitialEvents !== undefined) {
      if (match !== 'NotOlderThan')
        errs.push(fieldForbidden(RVM, 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
      if (!watchList) {
        errs.push(
          fieldForbidden('sendInitialEvents', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'),
        );
      }
    }
    if (match !== '') {
      if (o.sendInitialEvents === undefined) {
        errs.push(fieldForbidden(RVM, 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
      }
      if (match !== 'NotOlderThan') errs.push(fieldNotSupported(RVM, match, ['NotOlderThan']));
      if (o.continue !== '') errs.push(fieldForbidden(RVM, 'resourceVersionMatch is forbidden when continue is provided'));
    }
    return errs;
  }
  if (match !== '') {
    if (o.resourceVersion === '') errs.push(fieldForbidden(RVM, 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (o.continue !== '') errs.push(fieldForbidden(RVM, 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan') errs.push(fieldNotSupported(RVM, match, ['Exact', 'NotOlderThan', '']));
    if (match === 'Exact' && o.resourceVersion === '0') {
      errs.push(fieldForbidden(RVM, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
    }
  }
  if (o.sendInitialEvents !== undefined) errs.push(fieldForbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return errs;
}

/**
 * Steps 1 to 3 for a LIST or WATCH query. Throws the apiserver's StatusError: 400 for a value
 * the codec rejects, 422 for a forbidden combination.
 */
export function parseListOptions(query: URLSearchParams | string, options: ParseListOptionsOptions = {}): ListOptions {
  const watchList = options.watchList ?? true;
  const opts = setListOptionsDefaults(decodeListOptions(query), watchList);
  const errs = validateListOptions(opts, watchList);
  if (errs.length > 0) throw invalidListOptions(errs);
  return options.forceWatch === true ? { ...opts, watch: true } : opts;
}

/**
 * APIObjectVersioner.ParseResourceVersion (storage/api_object_versioner.go): "" and "0" are 0,
 * anything else a uint64; returns the field.Invalid error it would return.
 */
export function parseResourceVersion(rv: string): number | FieldError {
  if (rv === '' || rv === '0') return 0;
  const n = goParseUint64(rv);
  if (n instanceof GoNumError) return fieldInvalid('resourceVersion', rv, n.message);
  return Number(n);
}

/**
 * A bad resourceVersion as each verb answers it: LIST 400 `invalid resource version: ...`
 * (cacher / etcd3 store); GET and WATCH 500 with no reason and the bare field error (observed on
 * v1.37.2: the error is not a Status, so ErrorToAPIStatus makes it one).
 */
export function invalidResourceVersion(err: FieldError, verb: 'list' | 'get' | 'watch'): StatusError {
  const text = `${err.field}: ${err.body}`;
  return verb === 'list' ? badRequest(`invalid resource version: ${text}`) : unknownError(text);
}

/** Where a LIST starts, once the storage layer has checked the token and the resourceVersion. */
export interface ListStart {
  /** The parsed resourceVersion (0 for "" and "0"). */
  readonly resourceVersion: number;
  /** The decoded continue token, if any. */
  readonly continue: DecodedContinue | undefined;
}

/**
 * The storage layer's checks of a LIST, in the apiserver's order: the continue token (400
 * `invalid continue token: ...`), a resourceVersion beside it (400 `specifying resource version is
 * not allowed when using continue`, etcd3/store.go; "0" is allowed), then the resourceVersion.
 */
export function listStart(o: ListOptions, keyPrefix: string): ListStart {
  let decoded: DecodedContinue | undefined;
  if (o.continue !== '') {
    try {
      decoded = decodeContinue(o.continue, keyPrefix);
    } catch (e) {
      if (!(e instanceof ContinueTokenError)) throw e;
      throw invalidContinueToken(e);
    }
    if (o.resourceVersion !== '' && o.resourceVersion !== '0') {
      throw badRequest('specifying resource version is not allowed when using continue');
    }
  }
  const rv = parseResourceVersion(o.resourceVersion);
  if (typeof rv !== 'number') throw invalidResourceVersion(rv, 'list');
  return { resourceVersion: rv, continue: decoded };
}
