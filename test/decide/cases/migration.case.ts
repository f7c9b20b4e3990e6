/**
 * Policies written for the established proxy: several operators side by side are or-ed,
 * value-less criteria ignore their value, `device: {approved: false}` is a registered device that is
 * not approved, and empty conditions match nothing. Both back ends must read them alike.
 */
import type { Identity } from '../../../runtime/core/types.ts';
import type { DecisionCase } from '../case.ts';
import { configText } from '../../reference/support.ts';

const APP = 'app.example.com';
const route = (policy: unknown) => configText([{ from: `https://${APP}`, to: 'http://app', policy }]);

const employee: Identity = { user: 'u-1', email: 'one@example.com', groups: [], claims: {} };
const contractor: Identity = { user: 'u-2', email: 'two@contractor.example.com', groups: [], claims: {} };
const withDevice = (approved: boolean): Identity => ({ ...employee, device: { id: 'd-1', type: 'any', approved } });

/** A migrated deny rule: contractors deleting, or anybody from outside 10/8. */
const MIXED_DENY = route([
  { allow: { or: [{ domain: { ends_with: 'example.com' } }] } },
  {
    deny: {
      and: [{ email: { ends_with: '@contractor.example.com' } }, { http_method: { is: 'DELETE' } }],
      or: [{ source_ip: { not_in: ['10.0.0.0/8'] } }],
    },
  },
]);

const NOT_APPROVED = route([{ allow: { or: [{ accept: true }] } }, { deny: { or: [{ device: { approved: false } }] } }]);

export const cases: readonly DecisionCase[] = [
  {
    name: 'mixed operators: the `or` side alone denies (an outside address), though the `and` side does not hold',
    config: MIXED_DENY,
    request: { host: APP, peer: '203.0.113.9' },
    identity: employee,
    expect: { outcome: 'deny', status: 403 },
  },
  {
    name: 'mixed operators: the `and` side alone denies (a contractor deleting from inside)',
    config: MIXED_DENY,
    request: { host: APP, method: 'DELETE', peer: '10.1.2.3' },
    identity: contractor,
    expect: { outcome: 'deny', status: 403 },
  },
  {
    name: 'mixed operators: neither side holds, so the allow stands',
    config: MIXED_DENY,
    request: { host: APP, method: 'GET', peer: '10.1.2.3' },
    identity: contractor,
    expect: { outcome: 'allow' },
  },
  {
    name: 'mixed operators in an allow: either side lets in',
    config: route([{ allow: { and: [{ email: { is: 'nobody@example.com' } }], or: [{ domain: { is: 'example.com' } }] } }]),
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'allow' },
  },
  {
    name: '`authenticated_user: 1` is `authenticated_user: true`',
    config: route([{ allow: { or: [{ authenticated_user: 1 }] } }]),
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'allow' },
  },
  {
    name: '`reject: 1` is `reject: true`: it never holds, so nobody is let in',
    config: route([{ allow: { or: [{ reject: 1 }] } }]),
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'deny', status: 403 },
  },
  {
    name: '`accept: 1` lets everybody in, as `accept: true` does',
    config: route([{ allow: { or: [{ accept: 1 }] } }]),
    request: { host: APP },
    identity: contractor,
    expect: { outcome: 'allow' },
  },
  {
    name: '`device: {approved: false}` holds for a registered device that is not approved',
    config: NOT_APPROVED,
    request: { host: APP },
    identity: withDevice(false),
    expect: { outcome: 'deny', status: 403 },
  },
  {
    name: '`device: {approved: false}` does not hold for an approved device',
    config: NOT_APPROVED,
    request: { host: APP },
    identity: withDevice(true),
    expect: { outcome: 'allow' },
  },
  {
    name: '`device: {approved: false}` does not hold without a registered device',
    config: NOT_APPROVED,
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'allow' },
  },
  {
    name: 'an empty `allow` allows nobody',
    config: route([{ allow: {} }]),
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'deny', status: 403 },
  },
  {
    name: 'an empty `deny` denies nobody',
    config: route([{ allow: { or: [{ accept: true }] } }, { deny: { and: [] } }]),
    request: { host: APP },
    identity: contractor,
    expect: { outcome: 'allow' },
  },
  {
    name: 'an empty `and` beside an `or` drops out of the "any of"',
    config: route([{ allow: { and: [], or: [{ domain: { is: 'example.com' } }] } }]),
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'allow' },
  },
];
