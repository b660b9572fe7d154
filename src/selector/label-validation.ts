/**
 * Label key and value validation with the apiserver's messages, copied from apimachinery
 * pkg/api/validate/content/{kube.go,dns.go,errors.go} (IsLabelKey a.k.a. IsQualifiedName,
 * IsLabelValue, IsDNS1123Subdomain, RegexError, MaxLenError, EmptyError). Each function returns
 * the list of problems, empty when the input is valid. Lengths are UTF-8 bytes, as Go's len.
 */
import { goLen } from '../kube/go-format.ts';

const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY_ERR_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/** content/kube.go labelKeyMaxLength (the name part; the prefix is a DNS subdomain, max 253). */
const LABEL_KEY_MAX_LENGTH = 63;
const LABEL_KEY_RE = new RegExp(`^${LABEL_KEY_FMT}$`);

const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_VALUE_ERR_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/** content/kube.go LabelValueMaxLength. */
const LABEL_VALUE_MAX_LENGTH = 63;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_ERR_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/** content/dns.go DNS1123SubdomainMaxLength. */
const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

/** content/errors.go RegexError (the double space after each example's comma is Go's). */
export function regexError(msg: string, re: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${re}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((example, i) => {
    if (i > 0) out += ' or ';
    out += `'${example}', `;
  });
  return `${out}regex used for validation is '${re}')`;
}

function maxLenError(length: number): string {
  return `must be no more than ${length} bytes`;
}

const EMPTY_ERROR = 'must be non-empty';

/** content/dns.go IsDNS1123Subdomain. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (goLen(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

/** content/kube.go IsLabelKey: `[prefix/]name`, prefix a DNS subdomain, name at most 63 bytes. */
export function isLabelKey(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = value;
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push(`prefix part ${EMPTY_ERROR}`);
    else errs.push(...isDNS1123Subdomain(prefix).map((msg) => `prefix part ${msg}`));
  } else {
    return [
      `a valid label key ${regexError(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push(`name part ${EMPTY_ERROR}`);
  else if (goLen(name) > LABEL_KEY_MAX_LENGTH) errs.push(`name part ${maxLenError(LABEL_KEY_MAX_LENGTH)}`);
  if (!LABEL_KEY_RE.test(name)) errs.push(`name part ${regexError(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** content/kube.go IsLabelValue: empty, or at most 63 bytes of `[-A-Za-z0-9_.]` with alphanumeric ends. */
export function isLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (goLen(value) > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE_RE.test(value)) errs.push(regexError(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}
