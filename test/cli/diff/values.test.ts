/** values.ts: structural diff with secrets redacted, never revealed. */
import { describe, expect, it } from 'vitest';
import { diffValues, redact } from '../../../cli/diff/values.ts';

describe('redact', () => {
  it('replaces secrets and PEM documents by markers naming only their source', () => {
    const v = {
      inline: { value: 'hunter2', fingerprint: 'sha256:aaaa' },
      env: { ref: 'env:COOKIE_SECRET', fingerprint: 'sha256:bbbb' },
      pem: { pem: '-----BEGIN CERTIFICATE-----', sha256: 'sha256:cccc' },
      file: { file: 'ca.pem', sha256: 'sha256:dddd' },
      passwordFingerprint: 'sha256:eeee',
    };
    const r = redact(v);
    expect(r).toEqual({
      env: { redacted: 'secret', source: 'env:COOKIE_SECRET' },
      file: { redacted: 'pem', source: 'file:ca.pem' },
      inline: { redacted: 'secret', source: 'inline' },
      passwordFingerprint: { redacted: 'secret', source: 'masked' },
      pem: { redacted: 'pem', source: 'inline' },
    });
    const text = JSON.stringify(r);
    for (const hidden of ['hunter2', 'sha256:', 'BEGIN']) expect(text).not.toContain(hidden);
  });

  it('masks credentials written as request header values', () => {
    const r = redact({ set: { Authorization: 'Bearer s3cr3t', 'X-Api-Key': 'k3y', Cookie: 'sid=1', 'X-App': 'on' } });
    expect(r).toEqual({ set: { Authorization: { redacted: 'secret', source: 'masked' }, Cookie: { redacted: 'secret', source: 'masked' }, 'X-Api-Key': { redacted: 'secret', source: 'masked' }, 'X-App': 'on' } });
  });

  it('sorts object keys so output does not depend on construction order', () => {
    expect(Object.keys(redact({ b: 1, a: { d: 2, c: 3 } }) as object)).toEqual(['a', 'b']);
  });
});

describe('diffValues', () => {
  it('reports changed leaves by dotted path', () => {
    expect(diffValues({ server: { timeoutReadMs: 30000, insecure: true } }, { server: { timeoutReadMs: 10000, insecure: true } }, '')).toEqual([
      { path: 'server.timeoutReadMs', change: 'changed', redacted: false, old: 30000, new: 10000 },
    ]);
  });

  it('reports map keys added and removed, quoting odd keys', () => {
    const d = diffValues({ h: { 'X-A': '1', 'a b': '2' } }, { h: { 'X-A': '1', 'X-B': '3' } }, '');
    expect(d).toEqual([
      { path: 'h.X-B', change: 'added', redacted: false, old: null, new: '3' },
      { path: 'h["a b"]', change: 'removed', redacted: false, old: '2', new: null },
    ]);
  });

  it('compares lists of scalars whole and lists of objects item by item', () => {
    expect(diffValues({ s: ['a', 'b'] }, { s: ['a'] }, '')).toEqual([{ path: 's', change: 'changed', redacted: false, old: ['a', 'b'], new: ['a'] }]);
    const d = diffValues({ l: [{ x: 1 }] }, { l: [{ x: 2 }, { x: 3 }] }, '');
    expect(d.map((c) => [c.path, c.change])).toEqual([
      ['l[0].x', 'changed'],
      ['l[1]', 'added'],
    ]);
  });

  it('sees a secret change through its fingerprint or source, without the value', () => {
    const a = { s: { value: 'old-secret-value', fingerprint: 'sha256:1' } };
    const b = { s: { value: 'new-secret-value', fingerprint: 'sha256:2' } };
    const d = diffValues(a, b, '');
    expect(d).toEqual([{ path: 's', change: 'changed', redacted: true, old: { redacted: 'secret', source: 'inline' }, new: { redacted: 'secret', source: 'inline' } }]);
    expect(JSON.stringify(d)).not.toMatch(/secret-value|sha256/);
    expect(diffValues(a, { s: { ref: 'env:S', fingerprint: 'sha256:1' } }, '')[0]?.new).toEqual({ redacted: 'secret', source: 'env:S' });
    expect(diffValues(a, { s: { value: 'old-secret-value', fingerprint: 'sha256:1' } }, '')).toEqual([]);
  });

  it('redacts secrets inside added or removed items', () => {
    const d = diffValues({ certs: [] as unknown[] }, { certs: [{ key: { value: 'private-key-text', fingerprint: 'sha256:9' }, names: ['a'] }] }, '');
    expect(d).toHaveLength(1);
    expect(d[0]?.redacted).toBe(true);
    expect(JSON.stringify(d)).not.toContain('private-key-text');
  });
});
