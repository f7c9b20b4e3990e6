/**
 * A deny rule written for the established proxy, with `and` and `or` side by side, refuses
 * a request matching either (or), in the runtime and the reference interpreter alike. Before, svc
 * and-ed them and let through what the operator meant to refuse.
 */
import { describe, expect, it } from 'vitest';
import { decide } from '../../../runtime/request/decide.ts';
import type { Identity } from '../../../runtime/core/types.ts';
import { buildIndex } from '../../../runtime/plan/index.ts';
import { decideReference } from '../../reference/interpreter.ts';
import { compileBody, configText, makeRequest } from '../../reference/support.ts';

const body = compileBody(
  configText([
    {
      from: 'https://app.example.com',
      to: 'http://up',
      policy: [
        { allow: { or: [{ domain: { is: 'contractor.example.com' } }] } },
        { deny: { and: [{ http_method: { is: 'DELETE' } }, { email: { starts_with: 'temp' } }], or: [{ source_ip: { not_in: ['10.0.0.0/8'] } }] } },
      ],
    },
  ]),
);
const index = buildIndex(body);
const carol: Identity = { user: 'carol', email: 'carol@contractor.example.com', groups: [], claims: {} };

describe('several operators side by side in one deny', () => {
  it.each([
    ['inside 10/8, GET: neither operator holds', '10.1.2.3', 'GET', 'allow'],
    ['outside 10/8, GET: `or` holds alone', '203.0.113.9', 'GET', 'deny'],
    ['outside 10/8, DELETE', '203.0.113.9', 'DELETE', 'deny'],
  ])('%s → %s', (_name, peer, method, outcome) => {
    const request = makeRequest({ host: 'app.example.com', peer, method });
    expect(decide(index, request, carol).outcome).toBe(outcome);
    expect(decideReference(body, request, carol).outcome).toBe(outcome);
  });
});
