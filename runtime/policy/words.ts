/**
 * Why a request was refused, in words for the 403 page: a leaf of the policy with its matcher's
 * values (`your groups do not include `admins``), or, when only the reason id is known, a sentence
 * for its kind (`groups-unauthorized` → `your groups do not meet this route's policy`).
 *
 * Every sentence states a fact about the request or the user (the leaf's own value), never about
 * the rule around it: the same leaf can deny in a `deny` rule or under a `not`, and the fact stays
 * true either way. Values are plain text here; the page escapes them (`escapeHtml`).
 */
import type { Criterion, DateMatcher, ListMatcher, StringMatcher, TimeOfDayMatcher } from '../../compiler/plan/types.ts';
import { T, U, type Tri } from './criteria.ts';
import { POLICY_REASONS } from './program.ts';

type Name = Criterion['name'];

/** What each criterion is about, as the subject of a sentence (the reason id's `<name>`). */
const SUBJECT: Readonly<Record<Name, string>> = {
  accept: 'this route’s policy',
  reject: 'this route’s policy',
  authenticated_user: 'your sign-in',
  domain: 'your email domain',
  email: 'your email',
  user: 'your user id',
  groups: 'your groups',
  claim: 'your claims',
  device: 'your device',
  http_method: 'the request method',
  http_path: 'the requested path',
  cors_preflight: 'the request',
  client_certificate: 'your client certificate',
  invalid_client_certificate: 'your client certificate',
  source_ip: 'your network address',
  date: 'today’s date',
  time_of_day: 'the time of day',
  day_of_week: 'the day of the week',
};

/** Sentences for the reasons that are not a criterion leaf's. */
const OTHER: Readonly<Record<(typeof POLICY_REASONS)[number], string>> = {
  'user-unauthenticated': 'you are not signed in',
  'no-matching-rule': 'this route’s policy has no rule that allows anyone',
  'evaluation-error': 'the policy could not be evaluated, so access is refused',
  'device-unauthenticated': 'you have not authenticated with a device in this session',
};

/**
 * A sentence for a reason id of docs/decisions.md §4 (`<name>-ok`, `<name>-unauthorized`, or one of
 * `POLICY_REASONS`); an id it does not know comes back unchanged.
 */
export function reasonWords(reason: string): string {
  if (Object.hasOwn(OTHER, reason)) return OTHER[reason as keyof typeof OTHER];
  const m = /^([a-z-]+)-(ok|unauthorized)$/.exec(reason);
  const name = m?.[1]?.replaceAll('-', '_');
  if (!m || name === undefined || !Object.hasOwn(SUBJECT, name)) return reason;
  const subject = SUBJECT[name as Name];
  return m[2] === 'ok' ? `${subject} matched a rule that refuses access here` : `${subject} did not meet this route’s policy`;
}

/** A sentence for one policy leaf with the value it had for this request. */
export function leafWords(c: Criterion, value: Tri): string {
  if (value === U) return OTHER['user-unauthenticated'];
  const yes = value === T;
  switch (c.name) {
    case 'accept':
    case 'reject':
      // `accept` is always true and `reject` always false: a rule written to match everyone or no one.
      return yes ? 'a rule of this route applies to every request' : 'this route’s policy allows no one here';
    case 'authenticated_user':
      return yes ? 'you are signed in' : 'you are not signed in';
    case 'domain':
    case 'email':
    case 'user':
    case 'http_method':
    case 'http_path':
      return `${SUBJECT[c.name]} ${stringPhrase(c.match, yes)}`;
    case 'groups':
      return `your groups ${listPhrase(c.match, yes)}`;
    case 'claim':
      return `your claim ${q(c.claim)} ${listPhrase(c.match, yes, 'value')}`;
    case 'device': {
      const d = c.match;
      if (d.op === 'approved') return yes ? 'your device is approved' : 'your device is not registered or not approved';
      if (d.op === 'not_approved') return yes ? 'your device is registered and not approved' : 'your device is not registered, or is approved';
      return `your device ${d.op === 'type' ? 'type ' : ''}is ${yes ? '' : 'not '}${q(d.value)}`;
    }
    case 'cors_preflight':
      return yes ? 'the request is a CORS preflight' : 'the request is not a CORS preflight';
    case 'client_certificate': {
      const fingerprints = anyOf(c.match.op === 'is' ? [c.match.value] : c.match.values);
      return yes ? `your client certificate is ${fingerprints}` : `your connection presented no valid client certificate with fingerprint ${fingerprints}`;
    }
    case 'invalid_client_certificate':
      return yes ? 'the client certificate presented is not valid' : 'no invalid client certificate was presented';
    case 'source_ip': {
      const s = c.match;
      const list = s.op === 'is' ? [s.value] : s.values;
      const inside = s.op === 'not_in' ? !yes : yes;
      return `your network address is ${inside ? '' : 'not '}in ${anyOf(list)}`;
    }
    case 'date':
      return `today’s date is ${yes ? '' : 'not '}${range(c.match)}`;
    case 'time_of_day':
      return `the time of day (${c.match.timezone ?? 'UTC'}) is ${yes ? '' : 'not '}${range(c.match)}`;
    case 'day_of_week': {
      const d = c.match;
      const days = d.op === 'is' ? [d.value] : d.values;
      const inside = d.op === 'not_in' ? !yes : yes;
      return `the day of the week (${d.timezone ?? 'UTC'}) is ${inside ? '' : 'not '}${anyOf(days)}`;
    }
  }
}

function q(v: string): string {
  return `\`${v}\``;
}

/** `` `a` `` or `` one of `a`, `b` ``. */
function anyOf(values: readonly string[]): string {
  return values.length === 1 ? q(values[0]!) : `one of ${values.map(q).join(', ')}`;
}

function stringPhrase(m: StringMatcher, yes: boolean): string {
  const not = yes ? '' : 'not ';
  switch (m.op) {
    case 'is':
      return `is ${not}${q(m.value)}`;
    case 'starts_with':
      return yes ? `starts with ${q(m.value)}` : `does not start with ${q(m.value)}`;
    case 'ends_with':
      return yes ? `ends with ${q(m.value)}` : `does not end with ${q(m.value)}`;
    case 'contains':
      return yes ? `contains ${q(m.value)}` : `does not contain ${q(m.value)}`;
    case 'in':
      return `is ${not}${anyOf(m.values)}`;
    case 'not_in':
      return `is ${yes ? 'not ' : ''}${anyOf(m.values)}`;
  }
}

/** Phrases for list-valued criteria: `groups` (`include`) and claims (`have the value`). */
function listPhrase(m: ListMatcher, yes: boolean, noun: 'group' | 'value' = 'group'): string {
  const has = noun === 'group' ? (yes ? 'include' : 'do not include') : yes ? 'has the value' : 'does not have the value';
  const some = noun === 'group' ? (yes ? 'include one' : 'include none') : yes ? 'has a value' : 'has no value';
  switch (m.op) {
    case 'has':
    case 'is':
      return `${has} ${q(m.value)}`;
    case 'in':
      return yes ? `${has} ${anyOf(m.values)}` : `${some} of ${m.values.map(q).join(', ')}`;
    case 'not_in':
      return yes ? `${noun === 'group' ? 'include none' : 'has no value'} of ${m.values.map(q).join(', ')}` : `${noun === 'group' ? 'include' : 'has the value'} ${anyOf(m.values)}`;
    case 'starts_with':
      return `${some} starting with ${q(m.value)}`;
    case 'ends_with':
      return `${some} ending with ${q(m.value)}`;
    case 'contains':
      return `${some} containing ${q(m.value)}`;
  }
}

function range(m: DateMatcher | TimeOfDayMatcher): string {
  const after = m.after === undefined ? undefined : `after ${q(m.after)}`;
  const before = m.before === undefined ? undefined : `before ${q(m.before)}`;
  return [after, before].filter((x) => x !== undefined).join(' and ');
}
