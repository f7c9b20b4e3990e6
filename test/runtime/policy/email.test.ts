/**
 * The email reading policy and upstreams share (runtime/policy/email.ts, docs/policy.md "Emails"):
 * one address with exactly one `@`, a lower-cased domain, anything else no email at all. The
 * properties hold the parser, the reference's independent reading, and the criteria to each other
 * on arbitrary strings built from the characters that matter.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCriterion, domainOf, T, type PolicyInput } from '../../../runtime/policy/criteria.ts';
import { checkedEmail, parseEmail } from '../../../runtime/policy/email.ts';
import { identityEmail } from '../../../runtime/sessions/idp.ts';
import { emailAddress } from '../../reference/policy.ts';

/** Characters that make or break an address, and some that must never pass. */
const CHARS = ['a', 'B', 'z', '0', '9', '@', '.', '-', '_', '+', '"', ' ', '(', ')', '[', ']', '\\', '\n', '\t', '\0', 'é', 'İ', 'K', '\u00a0', '%', '!', '~', ','];
const emailish = fc.oneof(
  fc.array(fc.constantFrom(...CHARS), { maxLength: 24 }).map((cs) => cs.join('')),
  fc.tuple(fc.array(fc.constantFrom(...CHARS), { maxLength: 8 }), fc.array(fc.constantFrom('a', 'C', '.', '-', '@', '0', 'é'), { maxLength: 16 })).map(([l, d]) => `${l.join('')}@${d.join('')}`),
  fc.constantFrom('alice@Corp.Example', 'x@evil.example@corp.example', `${'a'.repeat(64)}@corp.example`, `${'a'.repeat(65)}@corp.example`, `a@${'b'.repeat(63)}.example`, `a@${'b'.repeat(64)}.example`),
);

const input = (email: string | undefined): PolicyInput => ({
  identity: { user: 'u', ...(email === undefined ? {} : { email }), groups: [], claims: {} },
  method: 'GET',
  path: '/',
  headers: {},
  clientAddress: '203.0.113.9',
  clientCertificate: null,
  nowMs: 0,
});

describe('parseEmail', () => {
  it('reads plain addresses, lower-casing the domain only', () => {
    expect(parseEmail('Alice.B+tag@Corp.Example')).toEqual({ local: 'Alice.B+tag', domain: 'corp.example', address: 'Alice.B+tag@corp.example' });
    expect(parseEmail("o'brien!#$%&*/=?^_`{|}~-@a-b.c0")?.domain).toBe('a-b.c0');
    expect(parseEmail('root@localhost')?.domain).toBe('localhost');
  });

  it.each([
    'x@evil.example@corp.example', '"x@evil.example"@corp.example', '"x"@corp.example', 'x@[10.0.0.1]', 'x(comment)@corp.example',
    'x@corp.example.', 'x@.corp.example', 'x@corp..example', 'x@-corp.example', 'x@corp-.example', '.x@corp.example', 'x.@corp.example',
    'x..y@corp.example', ' x@corp.example', 'x@corp.example ', 'x @corp.example', 'x@corp.example\n', 'x@corp.example\0', 'x@corp.ex_ample',
    'x@corp.éxample', 'é@corp.example', 'x@corp.\u212aample', '@corp.example', 'x@', 'x', '', 'Alice <a@corp.example>',
    `${'a'.repeat(65)}@corp.example`, `a@${'b'.repeat(64)}.example`, `a@${'b.'.repeat(127)}c`,
  ])('refuses %j', (text) => {
    expect(parseEmail(text)).toBeNull();
    expect(domainOf(text)).toBe('');
  });

  it('agrees with the reference reading on any string, and finds the one `@` it must', () => {
    fc.assert(
      fc.property(emailish, (s) => {
        const parsed = parseEmail(s);
        expect(parsed?.address).toBe(emailAddress(s));
        if (parsed === null) return;
        expect(s.split('@')).toHaveLength(2);
        expect(parsed.domain).toBe(s.slice(s.indexOf('@') + 1).toLowerCase());
        expect(parseEmail(parsed.address)).toEqual(parsed);
      }),
      { numRuns: 3000 },
    );
  });

  it('the `domain` criterion holds exactly for the parsed domain, in any case', () => {
    fc.assert(
      fc.property(emailish, emailish, (s, d) => {
        const parsed = parseEmail(s);
        const holds = (value: string) => compileCriterion({ op: 'criterion', name: 'domain', match: { op: 'is', value } })(input(s)) === T;
        if (parsed !== null) {
          expect(holds(parsed.domain)).toBe(true);
          expect(holds(parsed.domain.toUpperCase())).toBe(true);
        }
        if (d !== '') expect(holds(d)).toBe(parsed !== null && parsed.domain === d.toLowerCase());
        const endsWith = compileCriterion({ op: 'criterion', name: 'email', match: { op: 'ends_with', value: '@corp.example' } })(input(s)) === T;
        expect(endsWith).toBe(parsed?.domain === 'corp.example');
      }),
      { numRuns: 3000 },
    );
  });
});

describe('identityEmail (sign-in)', () => {
  it('keeps an address the provider vouches for, domain lower-cased', () => {
    expect(identityEmail({ email: 'Alice@Corp.Example', email_verified: true }, false)).toBe('Alice@corp.example');
    expect(identityEmail({ email: 'a@corp.example', email_verified: 'true' }, false)).toBe('a@corp.example');
  });

  it('drops an email whose email_verified is false, absent or odd, unless told to trust it', () => {
    for (const v of [false, 'false', undefined, null, 1, 'yes', 'TRUE']) {
      const claims = { email: 'a@corp.example', ...(v === undefined ? {} : { email_verified: v }) };
      expect(identityEmail(claims, false)).toBeUndefined();
      expect(identityEmail(claims, true)).toBe('a@corp.example');
    }
  });

  it('never keeps an email that is not an address, trusted or not', () => {
    for (const trust of [false, true]) {
      expect(identityEmail({ email: 'x@evil.example@corp.example', email_verified: true }, trust)).toBeUndefined();
      expect(identityEmail({ email: ['a@corp.example'], email_verified: true }, trust)).toBeUndefined();
    }
    expect(checkedEmail(undefined)).toBeUndefined();
  });
});
