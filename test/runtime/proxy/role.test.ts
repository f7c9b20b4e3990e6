/** Each role of a split deployment answers only its part (runtime/proxy/role.ts). */
import { describe, expect, it } from 'vitest';
import type { Decision } from '../../../runtime/core/types.ts';
import { roleAnswers } from '../../../runtime/proxy/role.ts';

const route = { index: 0, id: 'r-1', name: null };
const D: Record<string, Decision> = {
  allow: { outcome: 'allow', status: 200, route, reasons: [], upstream: { url: 'http://up/', host: 'up', headers: {}, assertion: false } },
  deny: { outcome: 'deny', status: 403, route, reasons: ['email-unauthorized'] },
  signIn: { outcome: 'unauthenticated', status: 302, route, reasons: ['user-unauthenticated'], location: 'https://auth.example.com/.svc/sign_in' },
  authenticate: { outcome: 'internal', status: 200, endpoint: { service: 'authenticate', path: '/.svc/sign_in' }, reasons: ['internal'] },
  handoff: { outcome: 'internal', status: 200, endpoint: { service: 'proxy', path: '/.svc/callback' }, reasons: ['internal'] },
  forwardAuth: { outcome: 'internal', status: 200, endpoint: { service: 'forward_auth', path: '/' }, reasons: ['internal'] },
  bad: { outcome: 'bad_request', status: 400, problem: 'host-duplicate', reasons: ['host-duplicate'] },
};

describe('what each role answers', () => {
  it('all-in-one answers everything', () => {
    for (const d of Object.values(D)) expect(roleAnswers('all', d)).toBe(d);
  });
  it('the proxy answers routes and its own endpoints, never the authenticate service’s', () => {
    for (const k of ['allow', 'deny', 'signIn', 'handoff', 'forwardAuth', 'bad']) expect(roleAnswers('proxy', D[k]!)).toBe(D[k]);
    expect(roleAnswers('proxy', D['authenticate']!)).toMatchObject({ outcome: 'not_found', status: 404 });
  });
  it('the authenticate service answers its own endpoints only (and bad requests as such)', () => {
    expect(roleAnswers('authenticate', D['authenticate']!)).toBe(D['authenticate']);
    expect(roleAnswers('authenticate', D['bad']!)).toBe(D['bad']);
    for (const k of ['allow', 'deny', 'signIn', 'handoff', 'forwardAuth']) expect(roleAnswers('authenticate', D[k]!)).toMatchObject({ outcome: 'not_found', status: 404 });
  });
});
