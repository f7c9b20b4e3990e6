/**
 * Every criterion and matcher, in both surfaces: the text form and the document form of each case
 * must give the same IR leaf; each invalid case must report the same code in both surfaces.
 */
import { describe, expect, it } from 'vitest';
import type { Expr } from '../../../compiler/policy/ir.ts';
import { doc, text, underlined } from './helpers.ts';

const FP = 'ab'.repeat(32);
const FP_COLONS = Array.from({ length: 32 }, () => 'AB').join(':');

interface Case {
  readonly t: string; // text condition
  readonly y: string; // YAML flow criterion
  readonly want: Expr;
}

const leaf = (x: object): Expr => ({ op: 'criterion', ...x }) as Expr;

const VALID: readonly Case[] = [
  // boolean criteria
  { t: 'accept', y: '{accept: true}', want: leaf({ name: 'accept' }) },
  { t: 'true', y: '{accept: true}', want: leaf({ name: 'accept' }) },
  { t: 'reject', y: '{reject: true}', want: leaf({ name: 'reject' }) },
  { t: 'false', y: '{reject: true}', want: leaf({ name: 'reject' }) },
  { t: 'authenticated_user', y: '{authenticated_user: true}', want: leaf({ name: 'authenticated_user' }) },
  { t: 'cors_preflight', y: '{cors_preflight: true}', want: leaf({ name: 'cors_preflight' }) },
  { t: 'invalid_client_certificate', y: '{invalid_client_certificate: true}', want: leaf({ name: 'invalid_client_certificate' }) },
  // string criteria x string matchers
  ...(['domain', 'email', 'user', 'http_method', 'http_path'] as const).flatMap((name): Case[] => [
    { t: `${name} is "v"`, y: `{${name}: {is: v}}`, want: leaf({ name, match: { op: 'is', value: 'v' } }) },
    { t: `${name} is "v"`, y: `{${name}: v}`, want: leaf({ name, match: { op: 'is', value: 'v' } }) },
    { t: `${name} starts_with "v"`, y: `{${name}: {starts_with: v}}`, want: leaf({ name, match: { op: 'starts_with', value: 'v' } }) },
    { t: `${name} ends_with "v"`, y: `{${name}: {ends_with: v}}`, want: leaf({ name, match: { op: 'ends_with', value: 'v' } }) },
    { t: `${name} contains "v"`, y: `{${name}: {contains: v}}`, want: leaf({ name, match: { op: 'contains', value: 'v' } }) },
    { t: `${name} in ["a", "b"]`, y: `{${name}: {in: [a, b]}}`, want: leaf({ name, match: { op: 'in', values: ['a', 'b'] } }) },
    { t: `${name} in ["a", "b"]`, y: `{${name}: [a, b]}`, want: leaf({ name, match: { op: 'in', values: ['a', 'b'] } }) },
    { t: `${name} not_in ["a"]`, y: `{${name}: {not_in: [a]}}`, want: leaf({ name, match: { op: 'not_in', values: ['a'] } }) },
  ]),
  // list criteria
  { t: 'groups has "admins"', y: '{groups: {has: admins}}', want: leaf({ name: 'groups', match: { op: 'has', value: 'admins' } }) },
  { t: 'groups has "admins"', y: '{groups: admins}', want: leaf({ name: 'groups', match: { op: 'has', value: 'admins' } }) },
  { t: 'groups in ["a", "b"]', y: '{groups: [a, b]}', want: leaf({ name: 'groups', match: { op: 'in', values: ['a', 'b'] } }) },
  { t: 'groups starts_with "team-"', y: '{groups: {starts_with: team-}}', want: leaf({ name: 'groups', match: { op: 'starts_with', value: 'team-' } }) },
  { t: 'claim/family_name is "x"', y: '{"claim/family_name": {is: x}}', want: leaf({ name: 'claim', claim: 'family_name', match: { op: 'is', value: 'x' } }) },
  { t: 'claim/family_name has "x"', y: '{"claim/family_name": x}', want: leaf({ name: 'claim', claim: 'family_name', match: { op: 'has', value: 'x' } }) },
  { t: 'claim/"odd name" has "y"', y: '{"claim/odd name": {has: y}}', want: leaf({ name: 'claim', claim: 'odd name', match: { op: 'has', value: 'y' } }) },
  { t: 'claim/address.country not_in ["fr"]', y: '{"claim/address.country": {not_in: [fr]}}', want: leaf({ name: 'claim', claim: 'address.country', match: { op: 'not_in', values: ['fr'] } }) },
  { t: 'claim/"https://x.example/roles" contains "adm"', y: '{"claim/https://x.example/roles": {contains: adm}}', want: leaf({ name: 'claim', claim: 'https://x.example/roles', match: { op: 'contains', value: 'adm' } }) },
  // device
  { t: 'device is "dev-1"', y: '{device: {is: dev-1}}', want: leaf({ name: 'device', match: { op: 'is', value: 'dev-1' } }) },
  { t: 'device is "dev-1"', y: '{device: dev-1}', want: leaf({ name: 'device', match: { op: 'is', value: 'dev-1' } }) },
  { t: 'device type "enclave_only"', y: '{device: {type: enclave_only}}', want: leaf({ name: 'device', match: { op: 'type', value: 'enclave_only' } }) },
  { t: 'device approved', y: '{device: {approved: true}}', want: leaf({ name: 'device', match: { op: 'approved' } }) },
  // The established proxy's `approved: false`: a registered device that is not approved.
  { t: 'device not_approved', y: '{device: {approved: false}}', want: leaf({ name: 'device', match: { op: 'not_approved' } }) },
  { t: 'device not_approved', y: '{device: {not_approved: true}}', want: leaf({ name: 'device', match: { op: 'not_approved' } }) },
  {
    t: 'device approved and device type "any"',
    y: '{device: {approved: true, type: any}}',
    want: { op: 'and', args: [leaf({ name: 'device', match: { op: 'approved' } }), leaf({ name: 'device', match: { op: 'type', value: 'any' } })] },
  },
  // client certificate
  { t: `client_certificate is "${FP}"`, y: `{client_certificate: {fingerprint: "${FP_COLONS}"}}`, want: leaf({ name: 'client_certificate', match: { op: 'is', value: FP } }) },
  { t: `client_certificate fingerprint "${FP.toUpperCase()}"`, y: `{client_certificate: "${FP}"}`, want: leaf({ name: 'client_certificate', match: { op: 'is', value: FP } }) },
  { t: `client_certificate in ["${FP}"]`, y: `{client_certificate: {fingerprint: ["${FP}"]}}`, want: leaf({ name: 'client_certificate', match: { op: 'in', values: [FP] } }) },
  // source ip
  { t: 'source_ip in ["10.0.0.0/8", "2001:DB8::/32"]', y: '{source_ip: {in: [10.0.0.0/8, "2001:db8::/32"]}}', want: leaf({ name: 'source_ip', match: { op: 'in', values: ['10.0.0.0/8', '2001:db8::/32'] } }) },
  { t: 'source_ip is "192.168.1.1"', y: '{source_ip: 192.168.1.1}', want: leaf({ name: 'source_ip', match: { op: 'is', value: '192.168.1.1/32' } }) },
  { t: 'source_ip not_in ["::1"]', y: '{source_ip: {not_in: ["::1"]}}', want: leaf({ name: 'source_ip', match: { op: 'not_in', values: ['::1/128'] } }) },
  // date
  { t: 'date after "2025-01-01T00:00:00Z"', y: '{date: {after: "2025-01-01T00:00:00Z"}}', want: leaf({ name: 'date', match: { op: 'range', after: '2025-01-01T00:00:00.000Z' } }) },
  {
    t: 'date after "2025-01-01T01:00:00+01:00" before "2025-02-01T00:00Z"',
    y: '{date: {after: "2025-01-01T00:00:00Z", before: "2025-02-01T00:00:00.000Z"}}',
    want: leaf({ name: 'date', match: { op: 'range', after: '2025-01-01T00:00:00.000Z', before: '2025-02-01T00:00:00.000Z' } }),
  },
  // time of day
  {
    t: 'time_of_day after "09:00" before "17:00" timezone "Europe/Paris"',
    y: '{time_of_day: {after: "09:00", before: "17:00", timezone: europe/paris}}',
    want: leaf({ name: 'time_of_day', match: { op: 'range', after: '09:00', before: '17:00', timezone: 'Europe/Paris' } }),
  },
  { t: 'time_of_day before "06:00"', y: '{time_of_day: {before: "06:00"}}', want: leaf({ name: 'time_of_day', match: { op: 'range', before: '06:00' } }) },
  { t: 'time_of_day after "22:00" before "06:00"', y: '{time_of_day: {before: "06:00", after: "22:00"}}', want: leaf({ name: 'time_of_day', match: { op: 'range', after: '22:00', before: '06:00' } }) },
  // day of week
  { t: 'day_of_week is "mon"', y: '{day_of_week: Monday}', want: leaf({ name: 'day_of_week', match: { op: 'is', value: 'mon' } }) },
  { t: 'day_of_week in ["sat", "sun"]', y: '{day_of_week: [SAT, sunday]}', want: leaf({ name: 'day_of_week', match: { op: 'in', values: ['sat', 'sun'] } }) },
  {
    t: 'day_of_week not_in ["sat", "sun"] timezone "UTC"',
    y: '{day_of_week: {not_in: [sat, sun], timezone: Etc/UTC}}',
    want: leaf({ name: 'day_of_week', match: { op: 'not_in', values: ['sat', 'sun'], timezone: 'UTC' } }),
  },
  // several matchers in one criterion are and-ed
  {
    t: 'email starts_with "a" ends_with "@example.com"',
    y: '{email: {starts_with: a, ends_with: "@example.com"}}',
    want: { op: 'and', args: [leaf({ name: 'email', match: { op: 'starts_with', value: 'a' } }), leaf({ name: 'email', match: { op: 'ends_with', value: '@example.com' } })] },
  },
];

describe('criteria: both surfaces give the same leaf', () => {
  for (const c of VALID) {
    it(`${c.t}  ≡  ${c.y}`, () => {
      const a = text(`allow if ${c.t}`);
      const b = doc(`allow: {or: [${c.y}]}`);
      expect(a.diags).toEqual([]);
      expect(b.diags).toEqual([]);
      expect(a.ir).toEqual({ rules: [{ action: 'allow', when: c.want }] });
      expect(b.ir).toEqual(a.ir);
    });
  }
});

interface BadCase {
  readonly t: string | undefined; // text condition (undefined: not expressible in text)
  readonly y: string | undefined; // YAML criterion (undefined: not expressible in a document)
  readonly code: string;
}

const INVALID: readonly BadCase[] = [
  { t: 'emial is "a"', y: '{emial: {is: a}}', code: 'SVC4002' },
  { t: 'email iss "a"', y: '{email: {iss: a}}', code: 'SVC4003' },
  { t: 'email has "a"', y: '{email: {has: a}}', code: 'SVC4003' },
  { t: 'source_ip starts_with "10."', y: '{source_ip: {starts_with: "10."}}', code: 'SVC4003' },
  { t: 'date is "2025-01-01T00:00:00Z"', y: '{date: {is: "2025-01-01T00:00:00Z"}}', code: 'SVC4003' },
  { t: 'accept is "x"', y: '{accept: {is: x}}', code: 'SVC4003' },
  { t: 'email is ["a"]', y: '{email: {is: [a]}}', code: 'SVC4004' },
  { t: 'email in "a"', y: '{email: {in: a}}', code: 'SVC4004' },
  { t: 'email is', y: '{email: {is: null}}', code: 'SVC4004' },
  { t: undefined, y: '{email: {is: 42}}', code: 'SVC4004' },
  { t: undefined, y: '{accept: [1]}', code: 'SVC4004' },
  { t: 'device approved "x"', y: '{device: {approved: "x"}}', code: 'SVC4004' },
  { t: 'date "2025-01-01T00:00:00Z"', y: undefined, code: 'SVC4001' },
  { t: undefined, y: '{date: "2025-01-01T00:00:00Z"}', code: 'SVC4004' },
  { t: 'email in []', y: '{email: {in: []}}', code: 'SVC4005' },
  { t: undefined, y: '{accept: false}', code: 'SVC4008' },
  { t: undefined, y: '{authenticated_user: false}', code: 'SVC4008' },
  { t: undefined, y: '{accept: 0}', code: 'SVC4008' },
  { t: undefined, y: '{reject: "no"}', code: 'SVC4008' },
  { t: undefined, y: '{cors_preflight: Off}', code: 'SVC4008' },
  { t: undefined, y: '{device: {not_approved: false}}', code: 'SVC4008' },
  { t: 'device not_approved "x"', y: '{device: {approved: 1}}', code: 'SVC4004' },
  { t: 'source_ip in ["10.0.0.0/33"]', y: '{source_ip: {in: [10.0.0.0/33]}}', code: 'SVC4009' },
  { t: 'source_ip is "10.0.0.256"', y: '{source_ip: 10.0.0.256}', code: 'SVC4009' },
  { t: 'source_ip is "fe80::1%eth0"', y: '{source_ip: "fe80::1%eth0"}', code: 'SVC4009' },
  { t: 'date after "2025-02-30T00:00:00Z"', y: '{date: {after: "2025-02-30T00:00:00Z"}}', code: 'SVC4010' },
  { t: 'date before "2025-01-01"', y: '{date: {before: "2025-01-01"}}', code: 'SVC4010' },
  { t: 'time_of_day after "9:00"', y: '{time_of_day: {after: "9:00"}}', code: 'SVC4011' },
  { t: 'time_of_day before "24:00"', y: '{time_of_day: {before: "24:00"}}', code: 'SVC4011' },
  { t: 'time_of_day after "09:00" timezone "Mars/Olympus"', y: '{time_of_day: {after: "09:00", timezone: Mars/Olympus}}', code: 'SVC4012' },
  { t: 'day_of_week is "mo"', y: '{day_of_week: mo}', code: 'SVC4013' },
  { t: 'day_of_week in ["mon", "funday"]', y: '{day_of_week: [mon, funday]}', code: 'SVC4013' },
  { t: 'claim/"" has "x"', y: '{"claim/": {has: x}}', code: 'SVC4014' },
  { t: 'claim has "x"', y: '{claim: {has: x}}', code: 'SVC4014' },
  { t: 'email is "a\\u0000b"', y: '{email: {is: "a\\u0000b"}}', code: 'SVC4015' },
  { t: 'email in ["ok", "a\\tb"]', y: '{email: {in: [ok, "a\\tb"]}}', code: 'SVC4015' },
  { t: 'claim/"a\\nb" has "x"', y: '{"claim/a\\nb": {has: x}}', code: 'SVC4015' },
  { t: 'email', y: '{email: {}}', code: 'SVC4018' },
  { t: 'time_of_day timezone "UTC"', y: '{time_of_day: {timezone: UTC}}', code: 'SVC4018' },
  { t: 'client_certificate is "abcd"', y: '{client_certificate: abcd}', code: 'SVC4019' },
  { t: 'time_of_day after "09:00" after "10:00"', y: undefined, code: 'SVC4020' },
  { t: 'date after "2025-02-01T00:00:00Z" before "2025-01-01T00:00:00Z"', y: '{date: {after: "2025-02-01T00:00:00Z", before: "2025-01-01T00:00:00Z"}}', code: 'SVC4021' },
  { t: 'time_of_day after "09:00" before "09:00"', y: '{time_of_day: {after: "09:00", before: "09:00"}}', code: 'SVC4021' },
  { t: 'email is ""', y: '{email: ""}', code: 'SVC4022' },
  { t: 'time_of_day after "09:00" timezone ""', y: '{time_of_day: {after: "09:00", timezone: ""}}', code: 'SVC4022' },
];

describe('criteria: invalid values report the same code in both surfaces', () => {
  for (const c of INVALID) {
    it(`${c.code}: ${c.t ?? '-'} | ${c.y ?? '-'}`, () => {
      if (c.t !== undefined) {
        const a = text(`allow if ${c.t}`);
        expect(a.ir).toBeUndefined();
        expect(a.codes).toEqual([c.code]);
      }
      if (c.y !== undefined) {
        const b = doc(`allow: {or: [${c.y}]}`);
        expect(b.ir).toBeUndefined();
        expect(b.codes).toEqual([c.code]);
      }
    });
  }
});

describe('criteria: messages', () => {
  it('suggests the nearest criterion and matcher', () => {
    expect(text('allow if emaill is "a"').diags[0]!.help).toBe('did you mean `email`?');
    expect(text('allow if email stars_with "a"').diags[0]!.help).toMatch(/^did you mean `starts_with`\?/);
    expect(text('allow if groups is "a" and grups has "b"').diags[0]!.help).toBe('did you mean `groups`?');
  });

  it('quotes user values with control characters escaped', () => {
    const d = text('allow if email is "a\\u0001b"').diags[0]!;
    expect(d.message).toBe('the value of `email is` `a\\u0001b` contains a control character');
    expect(d.message).not.toMatch(/[\u0000-\u001f]/);
  });

  it('explains `false` on a boolean criterion', () => {
    const d = doc('allow: {or: [{accept: false}]}').diags[0]!;
    expect(d.name).toBe('policy-boolean-false');
    expect(d.help).toMatch(/reject/);
  });

  it('accepts a value-less criterion written with any other scalar, as the established proxy does, with a warning at the value', () => {
    for (const [name, written] of [['accept', '1'], ['reject', '1'], ['authenticated_user', '"yes"'], ['cors_preflight', 'null'], ['invalid_client_certificate', '2'], ['accept', '"true"']] as const) {
      const d = doc(`allow: {or: [{${name}: ${written}}]}`);
      expect(d.ir, `${name}: ${written}`).toEqual({ rules: [{ action: 'allow', when: leaf({ name }) }] });
      expect(d.codes).toEqual(['SVC4024']);
      expect(underlined(d.diags[0]!)).toBe(written);
      expect(d.diags[0]!.severity).toBe('warning');
    }
    expect(doc('allow: {or: [{accept: true}]}').codes).toEqual([]);
  });

  it('reports every bad item of a list, each at its own span', () => {
    const d = text('allow if source_ip in ["10.0.0.0/8", "x", "10.0.0.1/40"]').diags;
    expect(d.map((x) => x.code)).toEqual(['SVC4009', 'SVC4009']);
    expect(d.map((x) => x.span!.source.text.slice(x.span!.start, x.span!.end))).toEqual(['"x"', '"10.0.0.1/40"']);
  });
});
