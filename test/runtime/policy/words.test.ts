/**
 * The 403 page's words: every reason id the policy code can produce has a sentence (enumerated from
 * the sources of truth: the IR's criterion names and program.ts's other reasons, so a new criterion
 * or reason without words fails here), every criterion leaf says its matcher's values, and the
 * explanation names the deciding leaves behind its reasons.
 */
import { describe, expect, it } from 'vitest';
import { CRITERION_NAMES, type CriterionName } from '../../../compiler/policy/ir.ts';
import type { Criterion } from '../../../compiler/plan/types.ts';
import { F, T, U } from '../../../runtime/policy/criteria.ts';
import { compilePolicy, POLICY_REASONS, reasonOf } from '../../../runtime/policy/program.ts';
import { leafWords, reasonWords } from '../../../runtime/policy/words.ts';
import { text } from '../../compiler/policy/helpers.ts';

/** One or more leaves of every criterion, one per matcher kind (typed: a new name must be added). */
const SAMPLES: Readonly<Record<CriterionName, readonly Criterion[]>> = {
  accept: [{ op: 'criterion', name: 'accept' }],
  reject: [{ op: 'criterion', name: 'reject' }],
  authenticated_user: [{ op: 'criterion', name: 'authenticated_user' }],
  domain: [{ op: 'criterion', name: 'domain', match: { op: 'is', value: 'example.com' } }],
  email: [
    { op: 'criterion', name: 'email', match: { op: 'ends_with', value: '@example.com' } },
    { op: 'criterion', name: 'email', match: { op: 'in', values: ['a@x', 'b@x'] } },
  ],
  user: [{ op: 'criterion', name: 'user', match: { op: 'starts_with', value: 'svc-' } }],
  groups: [
    { op: 'criterion', name: 'groups', match: { op: 'has', value: 'admins' } },
    { op: 'criterion', name: 'groups', match: { op: 'not_in', values: ['contractors'] } },
    { op: 'criterion', name: 'groups', match: { op: 'contains', value: 'ops' } },
  ],
  claim: [{ op: 'criterion', name: 'claim', claim: 'org.team', match: { op: 'is', value: 'blue' } }],
  device: [
    { op: 'criterion', name: 'device', match: { op: 'approved' } },
    { op: 'criterion', name: 'device', match: { op: 'type', value: 'laptop' } },
  ],
  http_method: [{ op: 'criterion', name: 'http_method', match: { op: 'is', value: 'GET' } }],
  http_path: [{ op: 'criterion', name: 'http_path', match: { op: 'starts_with', value: '/admin' } }],
  cors_preflight: [{ op: 'criterion', name: 'cors_preflight' }],
  client_certificate: [{ op: 'criterion', name: 'client_certificate', match: { op: 'is', value: 'ab'.repeat(32) } }],
  invalid_client_certificate: [{ op: 'criterion', name: 'invalid_client_certificate' }],
  source_ip: [
    { op: 'criterion', name: 'source_ip', match: { op: 'in', values: ['10.0.0.0/8', '192.168.0.0/16'] } },
    { op: 'criterion', name: 'source_ip', match: { op: 'not_in', values: ['10.0.0.0/8'] } },
  ],
  date: [{ op: 'criterion', name: 'date', match: { op: 'range', after: '2025-01-01T00:00:00.000Z' } }],
  time_of_day: [{ op: 'criterion', name: 'time_of_day', match: { op: 'range', after: '09:00', before: '17:00', timezone: 'Europe/Paris' } }],
  day_of_week: [{ op: 'criterion', name: 'day_of_week', match: { op: 'in', values: ['mon', 'tue'] } }],
};

describe('reason words', () => {
  it('every reason id the policy code can produce has a sentence of its own', () => {
    const ids = [...POLICY_REASONS, ...CRITERION_NAMES.flatMap((n) => [`${n.replaceAll('_', '-')}-ok`, `${n.replaceAll('_', '-')}-unauthorized`])];
    for (const id of ids) {
      const words = reasonWords(id);
      expect(words, id).not.toBe(id);
      expect(words, id).toMatch(/^[a-z].* [a-z]/);
    }
    // The ids the leaves give are exactly these.
    for (const n of CRITERION_NAMES) for (const c of SAMPLES[n]) for (const v of [T, F, U] as const) expect(ids).toContain(reasonOf(c, v));
  });

  it('an id it does not know comes back unchanged', () => {
    expect(reasonWords('something-new')).toBe('something-new');
    expect(reasonWords('toString-ok')).toBe('toString-ok');
  });

  it('every criterion leaf, true or false, says its values; true and false differ', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual([...CRITERION_NAMES].sort());
    for (const n of CRITERION_NAMES) {
      for (const c of SAMPLES[n]) {
        const yes = leafWords(c, T);
        const no = leafWords(c, F);
        expect(yes, n).not.toBe(no);
        if ('match' in c && 'value' in c.match) expect(no, n).toContain(`\`${c.match.value}\``);
        if ('match' in c && 'values' in c.match) for (const v of c.match.values) expect(no, n).toContain(`\`${v}\``);
        expect(leafWords(c, U)).toBe('you are not signed in');
      }
    }
  });

  it('reads as a plain sentence for the common cases', () => {
    const [has, notIn] = SAMPLES.groups;
    expect(leafWords(has!, F)).toBe('your groups do not include `admins`');
    expect(leafWords(notIn!, F)).toBe('your groups include `contractors`');
    expect(leafWords(SAMPLES.domain[0]!, F)).toBe('your email domain is not `example.com`');
    expect(leafWords(SAMPLES.claim[0]!, F)).toBe('your claim `org.team` does not have the value `blue`');
    expect(leafWords(SAMPLES.source_ip[1]!, F)).toBe('your network address is in `10.0.0.0/8`');
    expect(leafWords(SAMPLES.time_of_day[0]!, F)).toBe('the time of day (Europe/Paris) is not after `09:00` and before `17:00`');
  });
});

describe('the explanation names the leaves behind its reasons', () => {
  const explain = (t: string, groups: string[]) => {
    const r = text(t);
    if (!r.ir) throw new Error(r.codes.join(', '));
    return compilePolicy(r.ir).explain({ identity: { user: 'u', email: 'u@other.example', groups, claims: {} }, method: 'GET', path: '/', headers: {}, clientAddress: '10.0.0.1', clientCertificate: null, nowMs: 0 });
  };

  it('two leaves with one reason id are both kept, each with its values', () => {
    const e = explain('allow if groups has "admins" or groups has "ops"', ['staff']);
    expect(e.reasons).toEqual(['groups-unauthorized']);
    expect(e.because.map((l) => leafWords(l.criterion, l.value))).toEqual(['your groups do not include `admins`', 'your groups do not include `ops`']);
  });

  it('a true deny rule gives its true leaves; the allow rules are not the reason', () => {
    const e = explain('allow if accept\ndeny if groups has "contractors"', ['contractors']);
    expect(e.verdict).toBe('deny');
    expect(e.because.map((l) => leafWords(l.criterion, l.value))).toEqual(['your groups include `contractors`']);
  });
});
