/**
 * Policies written for the established proxy: several operators side by side are or-ed,
 * value-less criteria ignore their value, `device: {approved: false}` is a registered device that is
 * not approved (and, the stricter reading, unknown for a session without a device: the device page),
 * and empty conditions match nothing. Both back ends must read them alike.
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
    name: '`device: {approved: false}` is unknown without a device in the session: an API client gets 401',
    config: NOT_APPROVED,
    request: { host: APP },
    identity: employee,
    expect: { outcome: 'unauthenticated', status: 401, reasons: ['device-unauthenticated'] },
  },
  {
    name: 'a browser without a device in its session goes to the device page of the route host, coming back to the URL',
    config: route([{ allow: { or: [{ device: { approved: true } }] } }]),
    request: { host: APP, target: '/x?y=1', headers: { accept: ['text/html'] } },
    identity: employee,
    expect: { outcome: 'unauthenticated', status: 302, location: `https://${APP}/.svc/webauthn?svc_redirect_uri=${encodeURIComponent(`https://${APP}/x?y=1`)}` },
  },
  {
    name: 'a device that does not meet a device criterion is 450',
    config: route([{ allow: { or: [{ device: { type: 'enclave_only' } }] } }]),
    request: { host: APP },
    identity: withDevice(true),
    expect: { outcome: 'deny', status: 450, reasons: ['device-unauthorized'] },
  },
  {
    name: '`type: any` holds for every registered device, `is` for its credential id',
    config: route([{ allow: { or: [{ device: { type: 'any' } }] } }, { deny: { or: [{ device: { is: 'd-2' } }] } }]),
    request: { host: APP },
    identity: withDevice(false),
    expect: { outcome: 'allow' },
  },
  {
    name: 'an anonymous request to a device route signs in first',
    config: route([{ allow: { or: [{ device: { approved: true } }] } }]),
    request: { host: APP },
    identity: null,
    expect: { outcome: 'unauthenticated', status: 401, reasons: ['user-unauthenticated'] },
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
