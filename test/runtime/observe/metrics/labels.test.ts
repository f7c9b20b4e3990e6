import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { methodLabel, NO_ROUTE, routeLabel, serviceLabel, statusClass } from '../../../../runtime/observe/metrics/labels.ts';

describe('metric labels are bounded', () => {
  it('route: its name, else its index, else the one no-route label', () => {
    expect(routeLabel({ name: 'app', index: 3 })).toBe('app');
    expect(routeLabel({ name: null, index: 3 })).toBe('3');
    expect(routeLabel(undefined)).toBe(NO_ROUTE);
  });

  it('method: any client text maps into a fixed set', () => {
    const allowed = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'other']);
    fc.assert(fc.property(fc.string(), (m) => allowed.has(methodLabel(m))));
    expect(methodLabel('get')).toBe('other');
    expect(methodLabel(undefined)).toBe('other');
  });

  it('status class: 1xx to 5xx, else aborted', () => {
    fc.assert(fc.property(fc.oneof(fc.integer(), fc.constant(undefined), fc.double()), (s) => /^([1-5]xx|aborted)$/.test(statusClass(s))));
    expect([statusClass(101), statusClass(204), statusClass(302), statusClass(404), statusClass(503), statusClass(undefined)]).toEqual(['1xx', '2xx', '3xx', '4xx', '5xx', 'aborted']);
  });

  it('service: svc all-in-one, svc-<name> for one service (spec 1.9)', () => {
    expect(serviceLabel({ mode: { services: 'all', allInOne: true, sharedSecret: null } })).toBe('svc');
    expect(serviceLabel({ mode: { services: 'proxy', allInOne: false, sharedSecret: null } })).toBe('svc-proxy');
  });
});
