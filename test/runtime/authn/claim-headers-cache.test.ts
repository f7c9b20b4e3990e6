/**
 * runtime/authn/identity-headers.ts `claimHeaders`: an identity's claim headers are computed once
 * per identity and header list, and a request gets the same headers as a fresh computation would
 * give: for the same identity again, for another list (another plan), and for another identity.
 */
import { describe, expect, it } from 'vitest';
import { claimHeaders } from '../../../runtime/authn/identity-headers.ts';
import type { Identity } from '../../../runtime/core/types.ts';

const alice: Identity = { user: 'u-alice', email: 'alice@example.com', groups: ['admins', 'ops'], claims: { department: 'eng', level: [3, 4] } };
const bob: Identity = { user: 'u-bob', groups: [], claims: {} };
const headersOf = (list: readonly (readonly [string, string])[], identity: Identity) => {
  const out: Record<string, string | string[] | undefined> = {};
  claimHeaders(list, identity, out);
  return out;
};

describe('claimHeaders', () => {
  const list = [
    ['x-svc-claim-email', 'email'],
    ['x-svc-claim-groups', 'groups'],
    ['x-svc-claim-department', 'department'],
    ['host', 'email'],
  ] as const;

  it('gives the same headers on every request of an identity, never Host', () => {
    const expected = { 'x-svc-claim-email': 'alice@example.com', 'x-svc-claim-groups': 'admins,ops', 'x-svc-claim-department': 'eng' };
    expect(headersOf(list, alice)).toEqual(expected);
    expect(headersOf(list, alice)).toEqual(expected);
  });

  it('follows another header list for the same identity (a reload), and another identity', () => {
    expect(headersOf(list, alice)['x-svc-claim-groups']).toBe('admins,ops');
    expect(headersOf([['x-user', 'user'], ['x-level', 'level']], alice)).toEqual({ 'x-user': 'u-alice', 'x-level': '3,4' });
    expect(headersOf(list, alice)).toEqual({ 'x-svc-claim-email': 'alice@example.com', 'x-svc-claim-groups': 'admins,ops', 'x-svc-claim-department': 'eng' });
    // Missing claims give no header.
    expect(headersOf(list, bob)).toEqual({});
  });

  it('sets only what it adds: headers already in the output stay', () => {
    const out: Record<string, string | string[] | undefined> = { 'x-forwarded-for': '10.0.0.1' };
    claimHeaders(list, alice, out);
    claimHeaders(list, alice, out);
    expect(out['x-forwarded-for']).toBe('10.0.0.1');
    expect(Object.keys(out)).toHaveLength(4);
  });
});
